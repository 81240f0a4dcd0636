/* Live frames cut to the page they land on. An htmx extension on the live socket
 * (`hx-ext="ws, live-frames"`): before ws.js swaps a frame's parts out of band, a part
 * whose target is not on this page is taken out, so htmx logs no `htmx:oobErrorNoTarget`
 * error for what the page never showed (a filtered list, an older page of the timeline).
 * A task row that the open list takes as new is handed to live.js as `supervisor:newRow`.
 */
(function () {
  "use strict";

  htmx.defineExtension("live-frames", {
    transformResponse: function (text) {
      // A <template> parses as htmx.makeFragment does, so rows stay rows (rows come first).
      var holder = document.createElement("template");
      holder.innerHTML = text;
      var box = document.querySelector("#task-rows[data-takes-new]");
      Array.prototype.slice.call(holder.content.children).forEach(function (part) {
        if (!part.id || document.getElementById(part.id)) return;
        part.remove();
        if (box && part.tagName === "TR" && /^task-row-/.test(part.id)) {
          document.dispatchEvent(new CustomEvent("supervisor:newRow", { detail: { content: part } }));
        }
      });
      return holder.innerHTML;
    },
  });
})();
