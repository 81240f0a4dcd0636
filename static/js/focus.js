/* Keyboard focus through swaps. A swap that takes the focused element away would drop
 * focus to the page body, and a keyboard user would start again from the top:
 * - after a confirm in the action preview (its form is gone), focus goes to the banner
 *   that tells what became of the action; when the confirm was refused because the
 *   preview changed, the new preview comes back in the old one's place and focus goes
 *   to its heading, so the operator reads what changed before confirming again;
 * - a live frame that replaces the section holding the focus gives it to the element
 *   of the same id in the new content.
 * Both happen within the swap's own events, so no other swap can land in between.
 */
(function () {
  "use strict";

  function focusOn(el) {
    if (!el) return;
    if (!el.matches("a[href], button, input, select, textarea, summary, [tabindex]")) {
      el.setAttribute("tabindex", "-1");
    }
    el.focus({ preventScroll: true });
  }

  document.addEventListener("htmx:afterSwap", function (event) {
    var config = event.detail && event.detail.requestConfig;
    var form = config && config.elt;
    if (!(form && form.matches && form.matches("form.confirm"))) return;
    var target = event.detail.target;
    if (target && target.id === "action-preview") {
      focusOn(document.getElementById("preview-h"));
    } else {
      focusOn(document.getElementById("action-banner") || document.getElementById("actions-h"));
    }
  });

  var focusedId = null;
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    var el = document.activeElement;
    focusedId = target && el && el !== document.body && el.id && target.contains(el) ? el.id : null;
  });
  document.addEventListener("htmx:oobAfterSwap", function () {
    var id = focusedId;
    focusedId = null;
    if (!id || (document.activeElement && document.activeElement !== document.body)) return;
    focusOn(document.getElementById(id));
  });
})();
