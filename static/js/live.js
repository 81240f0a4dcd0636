/* Supervisor's live page behaviour. An external file (no inline script, no hx-on):
 * it works under a strict Content-Security-Policy.
 *
 * - resumes the live socket from the last change seen (`{"resume": N}` on each open);
 * - keeps the open-flag count in the tab title: "(3) Supervisor";
 * - shows a browser notification when a flag opens (permission asked on a click only);
 * - shows a banner while the socket is down and re-fetches the page's main partial every
 *   30 s until it is back;
 * - keyboard: j/k move through task rows, Enter opens, ? shows the shortcuts, Esc closes;
 * - "select all" for the bulk checkboxes of the task list.
 */
(function () {
  "use strict";

  var POLL_MS = 30000;
  var lastChange = 0;
  var pollTimer = null;
  var socketDown = false;
  var notifiedFlags = {};
  var lastFlagSeen = null;
  var baseTitle = document.title.replace(/^\(\d+\)\s+/, "");

  function $(selector) { return document.querySelector(selector); }

  function intAttr(el, name) {
    var value = el ? parseInt(el.getAttribute(name), 10) : NaN;
    return isNaN(value) ? null : value;
  }

  /* ---- the change cursor ------------------------------------------------------- */

  function readCursor() {
    var seen = intAttr($("#live-cursor"), "data-change");
    if (seen !== null && seen > lastChange) lastChange = seen;
  }

  /* ---- the tab title ----------------------------------------------------------- */

  function updateTitle() {
    var count = intAttr($("#open-flag-count"), "data-count");
    if (count === null) return;
    document.title = count > 0 ? "(" + count + ") " + baseTitle : baseTitle;
  }

  /* ---- notifications ----------------------------------------------------------- */

  function notificationsSupported() { return "Notification" in window; }

  function showNotificationState() {
    var button = $("#enable-notifications");
    var state = $("#notification-state");
    if (!button) return;
    if (!notificationsSupported()) {
      button.hidden = true;
      return;
    }
    var permission = Notification.permission;
    button.hidden = permission !== "default";
    if (state) {
      state.hidden = permission === "default";
      state.textContent = permission === "granted" ? "Notifications on" : "Notifications blocked";
    }
  }

  function enableNotifications() {
    if (!notificationsSupported()) return;
    var asked = Notification.requestPermission(showNotificationState);
    if (asked && asked.then) asked.then(showNotificationState);
  }

  function notifyFlagOpened() {
    var el = $("#flag-opened");
    if (!el) return;
    var flag = el.getAttribute("data-flag");
    if (!flag || flag === lastFlagSeen) return;
    lastFlagSeen = flag;
    if (notifiedFlags[flag]) return;
    notifiedFlags[flag] = true;
    if (!notificationsSupported() || Notification.permission !== "granted") return;
    var label = el.getAttribute("data-label") || el.getAttribute("data-kind") || "flag";
    var url = el.getAttribute("data-url") || "/";
    try {
      var note = new Notification("Flag opened: " + label, {
        body: (el.getAttribute("data-title") || "") + " (" + el.getAttribute("data-kind") + ")",
        tag: "supervisor-flag-" + flag
      });
      note.onclick = function () {
        window.focus();
        window.location.assign(url);
        note.close();
      };
    } catch (e) {
      /* Some browsers allow notifications only from a service worker: the title
         count and the page still show the flag. */
    }
  }

  /* ---- connection banner and the slow poll ------------------------------------- */

  function setBanner(text) {
    var slot = $("#connection-status");
    if (!slot) return;
    slot.textContent = "";
    if (text) {
      var p = document.createElement("p");
      p.className = "banner";
      p.textContent = text;
      slot.appendChild(p);
    }
  }

  function userIsBusyIn(target) {
    var active = document.activeElement;
    if (active && target.contains(active) && isTyping(active)) return true;
    return !!target.querySelector("input[type=checkbox]:checked");
  }

  function pollOnce() {
    var target = $("[data-live-main]");
    if (!target || !target.id || !window.htmx) return;
    if (userIsBusyIn(target)) return;
    window.htmx.ajax("GET", window.location.href, {
      target: "#" + target.id,
      swap: "outerHTML"
    });
  }

  function startPolling() {
    if (pollTimer === null) pollTimer = window.setInterval(pollOnce, POLL_MS);
  }

  function stopPolling() {
    if (pollTimer !== null) {
      window.clearInterval(pollTimer);
      pollTimer = null;
    }
  }

  function socketOpened(event) {
    socketDown = false;
    setBanner("");
    stopPolling();
    readCursor();
    var wrapper = event.detail && event.detail.socketWrapper;
    if (wrapper) wrapper.send(JSON.stringify({ resume: lastChange }));
  }

  function sessionEnded() {
    // The server closed the socket because the session ended (a log-out in another tab,
    // the account deactivated): polling would only fetch the log-in page into this one.
    stopPolling();
    var slot = $("#connection-status");
    if (!slot) return;
    slot.textContent = "";
    var p = document.createElement("p");
    p.className = "banner";
    p.setAttribute("role", "alert");
    p.textContent = "Your session has ended, so live updates have stopped. ";
    var link = document.createElement("a");
    link.href = "/login/?next=" + encodeURIComponent(window.location.pathname + window.location.search);
    link.textContent = "Log in again";
    p.appendChild(link);
    slot.appendChild(p);
  }

  function socketClosed(event) {
    if (!$("#live")) return;
    socketDown = true;
    var detail = event.detail || {};
    var code = detail.event && detail.event.code;
    if (code === 4401) {
      sessionEnded();
      return;
    }
    setBanner("Live updates are interrupted: reconnecting. Meanwhile this page refreshes every 30 seconds.");
    startPolling();
    // ws.js reconnects by itself after abnormal closes; a server going away (restart,
    // deploy) closes with 1001, which it does not retry: retry that too.
    if (code === 1001 && detail.socketWrapper) {
      window.setTimeout(function () {
        if (socketDown && $("#live")) detail.socketWrapper.reconnect();
      }, 5000 + Math.random() * 5000);
    }
  }

  function afterMessage() {
    readCursor();
    updateTitle();
    notifyFlagOpened();
    restoreRowFocus();
  }

  /* ---- keyboard ---------------------------------------------------------------- */

  var focusedRowId = null;

  function isTyping(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll(".task-row[data-href]"));
  }

  function rowKey(row) {
    return row.id || row.getAttribute("data-href");
  }

  function focusRow(row) {
    rows().forEach(function (r) { r.classList.remove("kb-focus"); });
    if (!row) return;
    row.classList.add("kb-focus");
    row.setAttribute("tabindex", "-1");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
    focusedRowId = rowKey(row);
  }

  function currentRowIndex(list) {
    for (var i = 0; i < list.length; i++) {
      if (rowKey(list[i]) === focusedRowId) return i;
    }
    return -1;
  }

  function restoreRowFocus() {
    if (focusedRowId === null) return;
    var list = rows();
    var i = currentRowIndex(list);
    if (i >= 0 && !list[i].classList.contains("kb-focus")) {
      list[i].classList.add("kb-focus");
      list[i].setAttribute("tabindex", "-1");
      if (document.activeElement === document.body) list[i].focus({ preventScroll: true });
    }
  }

  function moveRow(step) {
    var list = rows();
    if (!list.length) return;
    var i = currentRowIndex(list);
    var next = i < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, i + step));
    focusRow(list[next]);
  }

  function openRow() {
    var list = rows();
    var i = currentRowIndex(list);
    if (i < 0 || document.activeElement !== list[i]) return false;
    var link = list[i].querySelector("a.row-link");
    window.location.assign(link ? link.href : list[i].getAttribute("data-href"));
    return true;
  }

  function showHelp() {
    var dialog = $("#shortcuts");
    if (dialog && !dialog.open && dialog.showModal) dialog.showModal();
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var dialog = $("#shortcuts");
    if (event.key === "Escape") {
      if (dialog && dialog.open) {
        dialog.close();
        event.preventDefault();
      } else if (focusedRowId !== null) {
        focusRow(null);
        focusedRowId = null;
      }
      return;
    }
    if (isTyping(event.target) || (dialog && dialog.open)) return;
    if (event.key === "j") { moveRow(1); event.preventDefault(); }
    else if (event.key === "k") { moveRow(-1); event.preventDefault(); }
    else if (event.key === "?") { showHelp(); event.preventDefault(); }
    else if (event.key === "Enter" && openRow()) { event.preventDefault(); }
  }

  /* ---- bulk selection ---------------------------------------------------------- */

  function taskBoxes() {
    return Array.prototype.slice.call(document.querySelectorAll("input[type=checkbox][name=task]"));
  }

  function syncSelectAll() {
    var all = $("#select-all");
    if (!all) return;
    var boxes = taskBoxes();
    var checked = boxes.filter(function (b) { return b.checked; }).length;
    all.checked = boxes.length > 0 && checked === boxes.length;
    all.indeterminate = checked > 0 && checked < boxes.length;
  }

  function onChange(event) {
    var el = event.target;
    if (el.id === "select-all") {
      taskBoxes().forEach(function (b) { b.checked = el.checked; });
    } else if (el.name === "task" && el.type === "checkbox") {
      syncSelectAll();
    }
  }

  /* ---- wiring ------------------------------------------------------------------ */

  function onClick(event) {
    var target = event.target.closest ? event.target.closest("button") : null;
    if (!target) return;
    if (target.id === "enable-notifications") enableNotifications();
    else if (target.id === "show-shortcuts") showHelp();
  }

  function start() {
    var live = $("#live");
    var initial = intAttr(live, "data-last-change");
    if (initial !== null) lastChange = initial;
    readCursor();
    updateTitle();
    var flagged = $("#flag-opened");
    lastFlagSeen = flagged ? flagged.getAttribute("data-flag") : null;
    document.querySelectorAll(".js-only").forEach(function (el) { el.hidden = false; });
    showNotificationState();
  }

  // "seconds.micro-pk": is row order a older than b (so it belongs below it)?
  function olderThan(a, b) {
    var x = (a || "0-0").split("-"), y = (b || "0-0").split("-");
    var tx = parseFloat(x[0]), ty = parseFloat(y[0]);
    return tx < ty || (tx === ty && parseInt(x[1], 10) < parseInt(y[1], 10));
  }

  // A live row whose task is not on the page is a new task: on the unfiltered first
  // page (newest first) it goes on top; elsewhere it does not belong.
  document.addEventListener("htmx:oobErrorNoTarget", function (event) {
    var row = event.detail && event.detail.content;
    var box = $("#task-rows[data-takes-new]");
    if (!box || !row || row.tagName !== "TR" || !/^task-row-/.test(row.id || "")) return;
    var body = box.querySelector("tbody");
    var placeholder = body.querySelector("tr:not([id])");
    if (placeholder) placeholder.remove();
    // Newest first, as the server sorts: by delegation time, then id.
    var key = row.getAttribute("data-order") || "";
    var before = Array.prototype.find.call(body.querySelectorAll("tr[data-order]"), function (r) {
      return olderThan(r.getAttribute("data-order"), key);
    });
    body.insertBefore(row, before || null);
    htmx.process(row);
  });

  document.addEventListener("htmx:wsOpen", socketOpened);
  document.addEventListener("htmx:wsClose", socketClosed);
  document.addEventListener("htmx:wsAfterMessage", afterMessage);
  document.addEventListener("htmx:afterSettle", function () {
    updateTitle();
    syncSelectAll();
    restoreRowFocus();
  });
  // A session that expired answers htmx with the log-in page: go there, do not embed it.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail && event.detail.xhr;
    var url = xhr && xhr.responseURL;
    if (url && new URL(url, window.location.href).pathname.indexOf("/login/") === 0) {
      event.detail.shouldSwap = false;
      window.location.assign(url);
    }
  });
  // A 403, 404 or 500 answer to htmx says what happened in the messages area (the
  // server retargets it there); htmx swaps no error answer by itself.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail && event.detail.xhr;
    if (xhr && xhr.status >= 400 && xhr.getResponseHeader("HX-Retarget") === "#messages") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener("keydown", onKey);
  document.addEventListener("change", onChange);
  document.addEventListener("click", onClick);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
