/* Supervisor's live page behaviour. An external file (no inline script, no hx-on):
 * it works under a strict Content-Security-Policy.
 *
 * - resumes the live socket from the last change seen (`{"resume": N}` on each open);
 * - keeps the open-flag count in the tab title, "(3) Supervisor", and on the tab's icon;
 * - keeps ages ("5 min ago") current, and copies an id's full text from its button;
 * - shows a browser notification when flags open (permission asked on a click only),
 *   one for a burst, once per browser however many tabs are open; the header's button
 *   says whether they are on (aria-pressed) and turns them off and on again;
 * - shows each time in the zone the operator chose, the other on hover;
 * - keeps the live task list to its newest 200 rows, with "N more — show";
 * - shows a banner while the socket is down and re-fetches the page's main partial every
 *   30 s until it is back;
 * - keyboard: j/k move through task rows, Enter opens, ? shows the shortcuts, Esc closes;
 * - "select all" for the bulk checkboxes of the task list.
 */
(function () {
  "use strict";

  var POLL_MS = 30000;
  var AGE_TICK_MS = 15000;
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
    updateFavicon(count);
    announceCount(count);
  }

  /* ---- the count, said to screen readers when it changes (not on load) ----------- */

  var announcedCount = null;

  function announceCount(count) {
    var slot = $("#open-count-words");
    if (!slot) return;
    if (announcedCount !== null && announcedCount !== count) {
      slot.textContent = count === 0 ? "No open problem awaits attention."
        : count + " open flag" + (count === 1 ? "" : "s") + " await attention.";
    }
    announcedCount = count;
  }

  /* ---- the tab's icon: the same count, drawn by the server (/favicon.svg?n=N) ---- */

  function updateFavicon(count) {
    var link = $("#favicon");
    if (!link) return;
    var href = link.getAttribute("href").split("?")[0] + (count > 0 ? "?n=" + count : "");
    if (link.getAttribute("href") !== href) link.setAttribute("href", href);
  }

  /* ---- ages: every <time data-ago> says how long ago, as the server words it ---- */

  function ageWords(seconds) {
    var s = Math.floor(Math.abs(seconds));
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) {
      var hours = Math.floor(s / 3600), minutes = Math.floor((s % 3600) / 60);
      return hours < 10 && minutes ? hours + " h " + minutes + " min" : hours + " h";
    }
    var days = Math.floor(s / 86400);
    return days + (days === 1 ? " day" : " days");
  }

  function refreshAges() {
    var now = Date.now();
    document.querySelectorAll("time[data-ago]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("datetime"));
      if (isNaN(at)) return;
      var seconds = (now - at) / 1000;
      var words = seconds >= 0 ? ageWords(seconds) + " ago" : "in " + ageWords(seconds);
      if (el.textContent !== words) el.textContent = words;
    });
  }

  /* ---- copy an id's full text ------------------------------------------------------ */

  function copyId(button) {
    var text = button.getAttribute("data-copy") || "";
    function done(word) {
      button.textContent = word;
      window.setTimeout(function () { button.textContent = "Copy"; }, 1500);
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done("Copied"); }, function () { done("Copy failed"); });
    } else {
      done("Copy failed");
    }
  }

  /* ---- notifications ----------------------------------------------------------- */

  function notificationsSupported() { return "Notification" in window; }

  // On when the browser allows them and the operator has not turned them off here (a
  // choice kept per browser, in localStorage, so every tab agrees).
  var NOTICE_CHOICE = "supervisor:notifications";

  function noticesChosenOff() {
    try { return window.localStorage.getItem(NOTICE_CHOICE) === "off"; } catch (e) { return false; }
  }

  function chooseNotices(on) {
    try { window.localStorage.setItem(NOTICE_CHOICE, on ? "on" : "off"); } catch (e) { /* kept for this page only */ }
  }

  function notificationsOn() {
    return notificationsSupported() && Notification.permission === "granted" && !noticesChosenOff();
  }

  function showNotificationState() {
    var button = $("#notifications-toggle");
    if (!button) return;
    if (!notificationsSupported()) {
      button.classList.remove("js-only");
      button.hidden = true;
      return;
    }
    var permission = Notification.permission;
    var on = notificationsOn();
    button.setAttribute("aria-pressed", on ? "true" : "false");
    button.classList.toggle("is-on", on);
    button.disabled = permission === "denied";
    button.textContent = permission === "denied" ? "Notifications blocked" : on ? "Notifications on" : "Notifications off";
    button.title = permission === "denied"
      ? "This browser blocks notifications from this site: allow them in its site settings."
      : on ? "Flags that open show as browser notifications. Click to turn them off."
        : "Click to show flags that open as browser notifications.";
  }

  function toggleNotifications() {
    if (!notificationsSupported()) return;
    var permission = Notification.permission;
    if (permission === "granted") {
      chooseNotices(noticesChosenOff());
      showNotificationState();
    } else if (permission === "default") {
      chooseNotices(true);
      var asked = Notification.requestPermission(showNotificationState);
      if (asked && asked.then) asked.then(showNotificationState);
    }
  }

  function watchNotificationPermission() {
    window.addEventListener("storage", function (event) {
      if (event.key === NOTICE_CHOICE) showNotificationState();
    });
    try {
      navigator.permissions.query({ name: "notifications" }).then(function (status) {
        status.onchange = showNotificationState;
      }, function () { /* not offered: the state is read again on each click */ });
    } catch (e) { /* no Permissions API */ }
  }

  /* ---- times in the zone the operator chose (web/time_zones.py) ----------------- */
  // The server writes every <time> in UTC with its shape (templatetags/readable.py);
  // when <html data-times="local"> each is written again in the browser's zone, with UTC
  // on hover, and otherwise the browser's zone is on hover. Ages keep their words and
  // carry both zones on hover.
  var TIMES_COOKIE = "supervisor-times";
  var localFormat = null;

  function pad(n, width) {
    var text = String(n);
    while (text.length < (width || 2)) text = "0" + text;
    return text;
  }

  function localZoneName() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }

  function offsetText(date) {
    var minutes = -date.getTimezoneOffset();
    var sign = minutes < 0 ? "-" : "+";
    minutes = Math.abs(minutes);
    return sign + pad(Math.floor(minutes / 60)) + ":" + pad(minutes % 60);
  }

  function partsOf(date, local) {
    if (!local) {
      return { y: date.getUTCFullYear(), mo: pad(date.getUTCMonth() + 1), d: pad(date.getUTCDate()),
        h: pad(date.getUTCHours()), mi: pad(date.getUTCMinutes()), s: pad(date.getUTCSeconds()) };
    }
    if (localFormat === null) {
      localFormat = new Intl.DateTimeFormat("en-GB", { year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
    }
    var p = {};
    localFormat.formatToParts(date).forEach(function (part) { p[part.type] = part.value; });
    return { y: p.year, mo: p.month, d: p.day, h: p.hour === "24" ? "00" : p.hour, mi: p.minute, s: p.second };
  }

  // The shapes of readable.SHAPES: "seconds", "minutes", "time" (of day, to the ms).
  function zoneText(date, shape, local, whole) {
    var p = partsOf(date, local);
    var day = p.y + "-" + p.mo + "-" + p.d;
    var zone = local ? " " + offsetText(date) : " UTC";
    if (shape === "minutes" && !whole) return day + " " + p.h + ":" + p.mi + zone;
    var clock = p.h + ":" + p.mi + ":" + p.s;
    if (shape === "time") {
      clock += "." + pad(date.getUTCMilliseconds(), 3);
      if (!whole) {
        // Under a heading of its UTC day: in the local zone, say the day when it differs.
        var utcDay = partsOf(date, false);
        var sameDay = day === utcDay.y + "-" + utcDay.mo + "-" + utcDay.d;
        return local ? (sameDay ? "" : day + " ") + clock + zone : clock;
      }
    }
    return day + " " + clock + zone;
  }

  function hoverText(date, shape, local) {
    var text = zoneText(date, shape, local, true);
    var name = localZoneName();
    return local && name ? text + " (" + name + ")" : text;
  }

  function timesInLocalZone() {
    return document.documentElement.getAttribute("data-times") === "local";
  }

  function showTimes() {
    var local = timesInLocalZone();
    document.querySelectorAll("time[datetime]").forEach(function (el) {
      var iso = el.getAttribute("datetime") || "";
      if (iso.indexOf("T") < 0) return;
      var date = new Date(iso.replace(/(\.\d{3})\d+/, "$1"));
      if (isNaN(date.getTime())) return;
      var shape = el.getAttribute("data-shape");
      var title;
      if (el.hasAttribute("data-ago")) {
        // The moment in the chosen zone, then in the other where it differs.
        title = hoverText(date, "seconds", local);
        if (date.getTimezoneOffset() !== 0) title += " · " + hoverText(date, "seconds", !local);
      } else if (shape) {
        var text = zoneText(date, shape, local, false);
        if (el.textContent !== text) el.textContent = text;
        title = hoverText(date, shape, !local);
      } else {
        return;
      }
      if (el.getAttribute("title") !== title) el.setAttribute("title", title);
    });
  }

  function chooseTimes(select) {
    var value = select.value === "local" ? "local" : "utc";
    document.cookie = TIMES_COOKIE + "=" + value + "; path=/; max-age=31536000; samesite=lax" +
      (window.location.protocol === "https:" ? "; secure" : "");
    document.documentElement.setAttribute("data-times", value);
    showTimes();
  }

  function notifyFlagOpened() { flagOpened($("#flag-opened")); }

  // A frame holds a #flag-opened for each flag its changes opened (an evaluation's
  // changes come in one frame); each replaces the one before, so each is read as it
  // is swapped in.
  // A live swap replaces a section whole: a disclosure the operator opened in it stays
  // open in the new one (matched by id, else by class and place among its like).
  function keepDisclosuresOpen(event) {
    var detail = event.detail || {};
    var old = detail.target, fresh = detail.fragment;
    if (!old || !fresh || !old.querySelectorAll || !fresh.querySelectorAll) return;
    var before = old.querySelectorAll("details");
    var after = fresh.querySelectorAll("details");
    Array.prototype.forEach.call(before, function (shown) {
      if (!shown.open) return;
      var match = shown.id ? fresh.querySelector("details#" + CSS.escape(shown.id)) : null;
      if (!match && !shown.id) {
        var like = function (d) { return d.className === shown.className; };
        var place = Array.prototype.filter.call(before, like).indexOf(shown);
        match = Array.prototype.filter.call(after, like)[place] || null;
      }
      if (match) match.open = true;
    });
  }

  function flagSwappedIn(event) {
    var detail = event.detail || {};
    if (!detail.target || detail.target.id !== "flag-opened" || !detail.fragment) return;
    flagOpened(detail.fragment.firstElementChild || detail.fragment);
  }

  function flagOpened(el) {
    if (!el || !el.getAttribute) return;
    var flag = el.getAttribute("data-flag");
    if (!flag || flag === lastFlagSeen) return;
    lastFlagSeen = flag;
    if (notifiedFlags[flag]) return;
    notifiedFlags[flag] = true;
    if (!notificationsOn()) return;
    queueNotice({
      id: flag,
      kind: el.getAttribute("data-kind") || "flag",
      label: el.getAttribute("data-label") || el.getAttribute("data-kind") || "flag",
      title: el.getAttribute("data-title") || "",
      url: el.getAttribute("data-url") || "/"
    });
  }

  /* ---- notifications: grouped, and once per browser ---------------------------- */
  // Flags that open within NOTICE_WINDOW_MS of the first make one notification, as the
  // alerts group a burst ("3 flags opened: …"). Every tab gets the same frames; when its
  // window closes a tab claims the flags no other tab has claimed yet and shows only
  // those: three tabs open, one notification. A flag's claim is a Web Lock named for it,
  // taken only if free and held a while: the browser keeps one record of locks for all
  // its tabs, where a write to localStorage reaches another tab's process a moment later
  // (two tabs under load both read "unclaimed" there). localStorage keeps the claims for
  // a day, for tabs that close their window after the lock is let go. A tab claims
  // nothing before it shows, so one closed meanwhile leaves its flags to the others.
  var NOTICE_WINDOW_MS = 3000;
  var NOTICE_JITTER_MS = 400; // tabs close their windows apart, even without a lock
  var NOTICE_CLAIMS = "supervisor:notified-flags";
  var NOTICE_CLAIMS_KEPT_MS = 24 * 3600 * 1000;
  var NOTICE_HOLD_MS = 10 * 60 * 1000; // a flag's lock, once claimed
  var NOTICE_LISTED = 4; // flags named in a grouped notification's body
  var noticeBurst = [];
  var noticeTimer = null;

  function queueNotice(flag) {
    noticeBurst.push(flag);
    if (noticeTimer === null) {
      noticeTimer = window.setTimeout(closeNoticeWindow, NOTICE_WINDOW_MS + Math.random() * NOTICE_JITTER_MS);
    }
  }

  function closeNoticeWindow() {
    noticeTimer = null;
    var burst = noticeBurst;
    noticeBurst = [];
    withNoticeLock(function () {
      return claimFlags(burst).then(function (fresh) {
        if (fresh.length) showNotice(fresh);
      });
    });
  }

  function withNoticeLock(work) {
    var done = false;
    function once() {
      if (done) return null;
      done = true;
      // a notification is a courtesy: never break the page
      try { return Promise.resolve(work()).catch(function () {}); } catch (e) { return null; }
    }
    if (navigator.locks && navigator.locks.request) {
      try {
        navigator.locks.request("supervisor-notices", once).catch(once);
        return;
      } catch (e) { /* no lock here: claim without one */ }
    }
    once();
  }

  function readClaims() {
    try {
      var claims = JSON.parse(window.localStorage.getItem(NOTICE_CLAIMS) || "{}");
      return claims && typeof claims === "object" ? claims : {};
    } catch (e) {
      return {};
    }
  }

  function claimFlags(burst) {
    var known = readClaims();
    var candidates = burst.filter(function (flag) { return !known[flag.id]; });
    return Promise.all(candidates.map(holdClaim)).then(function (held) {
      var fresh = candidates.filter(function (flag, i) { return held[i]; });
      if (fresh.length) keepClaims(fresh);
      return fresh;
    });
  }

  function holdClaim(flag) {
    // Without Web Locks, localStorage alone decides (and may let two tabs show).
    if (!(navigator.locks && navigator.locks.request)) return Promise.resolve(true);
    return new Promise(function (resolve) {
      function taken(lock) {
        resolve(!!lock);
        if (!lock) return null;
        return new Promise(function (release) { window.setTimeout(release, NOTICE_HOLD_MS); });
      }
      try {
        navigator.locks.request("supervisor-notice:" + flag.id, { ifAvailable: true }, taken)
          .catch(function () { resolve(true); });
      } catch (e) {
        resolve(true);
      }
    });
  }

  function keepClaims(flags) {
    var claims = readClaims();
    var now = Date.now();
    flags.forEach(function (flag) { claims[flag.id] = now; });
    Object.keys(claims).forEach(function (id) {
      if (!(now - claims[id] < NOTICE_CLAIMS_KEPT_MS)) delete claims[id];
    });
    try {
      window.localStorage.setItem(NOTICE_CLAIMS, JSON.stringify(claims));
    } catch (e) { /* storage full or denied: the locks still hold the claims a while */ }
  }

  function showNotice(flags) {
    if (!notificationsOn()) return;
    var first = flags[0];
    var title, body, url, tag;
    if (flags.length === 1) {
      title = "Flag opened: " + first.label;
      body = first.title + " (" + first.kind + ")";
      url = first.url;
      tag = "supervisor-flag-" + first.id;
    } else {
      var labels = [];
      flags.forEach(function (f) { if (labels.indexOf(f.label) < 0) labels.push(f.label); });
      title = flags.length + " flags opened: " + labels.slice(0, 3).join(", ") + (labels.length > 3 ? ", …" : "");
      body = flags.slice(0, NOTICE_LISTED).map(function (f) { return f.title + " (" + f.kind + ")"; }).join("\n");
      if (flags.length > NOTICE_LISTED) body += "\n…and " + (flags.length - NOTICE_LISTED) + " more";
      url = flags.every(function (f) { return f.url === first.url; }) ? first.url : "/";
      tag = "supervisor-flags-" + first.id + "-" + flags.length;
    }
    try {
      var note = new Notification(title, { body: body, tag: tag });
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
    // deploy) closes with 1001, and one whose channel layer (Redis) was lost with 4503,
    // neither of which it retries: retry those too.
    if ((code === 1001 || code === 4503) && detail.socketWrapper) {
      var wait = code === 4503 ? 2000 + Math.random() * 3000 : 5000 + Math.random() * 5000;
      window.setTimeout(function () {
        if (socketDown && $("#live")) detail.socketWrapper.reconnect();
      }, wait);
    }
  }

  function afterMessage() {
    readCursor();
    showJsOnly();
    refreshAges();
    showTimes();
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
    if (el.id === "times-zone") {
      chooseTimes(el);
    } else if (el.id === "select-all") {
      taskBoxes().forEach(function (b) { b.checked = el.checked; });
    } else if (el.name === "task" && el.type === "checkbox") {
      syncSelectAll();
    }
  }

  /* ---- wiring ------------------------------------------------------------------ */

  function onClick(event) {
    var target = event.target.closest ? event.target.closest("button") : null;
    if (!target) return;
    if (target.id === "notifications-toggle") toggleNotifications();
    else if (target.id === "show-shortcuts") showHelp();
    else if (target.classList.contains("copy") && target.hasAttribute("data-copy")) copyId(target);
  }

  function start() {
    var live = $("#live");
    var initial = intAttr(live, "data-last-change");
    if (initial !== null) lastChange = initial;
    readCursor();
    updateTitle();
    var flagged = $("#flag-opened");
    lastFlagSeen = flagged ? flagged.getAttribute("data-flag") : null;
    showJsOnly();
    showNotificationState();
    watchNotificationPermission();
    refreshAges();
    showTimes();
    window.setInterval(refreshAges, AGE_TICK_MS);
  }

  function showJsOnly() {
    document.querySelectorAll(".js-only[hidden]").forEach(function (el) { el.hidden = false; });
    document.querySelectorAll(".no-js-only:not([hidden])").forEach(function (el) { el.hidden = true; });
  }

  // "seconds.micro-pk": is row order a older than b (so it belongs below it)?
  function olderThan(a, b) {
    var x = (a || "0-0").split("-"), y = (b || "0-0").split("-");
    var tx = parseFloat(x[0]), ty = parseFloat(y[0]);
    return tx < ty || (tx === ty && parseInt(x[1], 10) < parseInt(y[1], 10));
  }

  // A live row whose task is not on the page is a new task: on the unfiltered first
  // page (newest first) it goes on top; elsewhere it does not belong (live_frames.js
  // hands over only what the open list takes).
  document.addEventListener("supervisor:newRow", function (event) {
    var row = event.detail && event.detail.content;
    var box = $("#task-rows[data-takes-new]");
    if (!box || !row || row.tagName !== "TR" || !/^task-row-/.test(row.id || "")) return;
    if (wasDropped(box, row)) return; // an update of a row the bound let go
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
    boundLiveRows(box);
  });

  /* ---- the live list, bounded -------------------------------------------------- */
  // An all-day tab of the list takes every new task over the socket: it keeps the
  // newest LIVE_ROWS rows (#task-rows' data-keep-rows may say fewer) and says how many
  // it let go, "N more — show", linking to them: the list's own next page from the
  // oldest row kept (the pager follows). A row in keyboard focus or selected for a bulk
  // action is kept.
  var LIVE_ROWS = 200;
  var droppedRows = new WeakMap(); // #task-rows -> {row id: true}; a new list starts anew

  function wasDropped(box, row) {
    var dropped = droppedRows.get(box);
    return !!(dropped && dropped[row.id]);
  }

  function boundLiveRows(box) {
    var keep = intAttr(box, "data-keep-rows");
    keep = keep !== null && keep > 0 ? keep : LIVE_ROWS;
    var list = box.querySelectorAll("tbody tr[data-order]");
    var over = list.length - keep;
    var dropped = droppedRows.get(box) || {};
    var count = 0;
    for (var i = list.length - 1; i >= 0 && count < over; i--) {
      if (rowKey(list[i]) === focusedRowId || list[i].querySelector("input[type=checkbox]:checked")) continue;
      dropped[list[i].id] = true;
      list[i].remove();
      count++;
    }
    droppedRows.set(box, dropped);
    if (count) showDropped(box, Object.keys(dropped).length);
  }

  // The list's cursor (api/pagination.py): base64url of ["delegated_at", pk], unpadded.
  function olderThanRow(row) {
    var time = row && row.querySelector("time[datetime]");
    var pk = row && parseInt((row.id || "").replace(/^task-row-/, ""), 10);
    if (!time || isNaN(pk)) return window.location.pathname;
    var cursor = window.btoa(JSON.stringify([time.getAttribute("datetime"), pk]));
    cursor = cursor.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    return window.location.pathname + "?cursor=" + encodeURIComponent(cursor);
  }

  function showDropped(box, total) {
    var note = box.querySelector("#dropped-tasks");
    if (!note) {
      note = document.createElement("p");
      note.id = "dropped-tasks";
      note.className = "new-tasks";
      var table = box.querySelector("table");
      table.parentNode.insertBefore(note, table.nextSibling);
    }
    var rowsLeft = box.querySelectorAll("tbody tr[data-order]");
    var href = olderThanRow(rowsLeft[rowsLeft.length - 1]);
    note.setAttribute("data-count", String(total));
    note.textContent = total + " more — ";
    var link = document.createElement("a");
    link.href = href;
    link.textContent = "show";
    note.appendChild(link);
    var pager = box.querySelector(".pager a[rel=next]");
    if (pager) pager.href = href;
  }

  document.addEventListener("htmx:wsOpen", socketOpened);
  document.addEventListener("htmx:wsClose", socketClosed);
  document.addEventListener("htmx:wsAfterMessage", afterMessage);
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    showJsOnly();
    showTimes();
  });
  document.addEventListener("htmx:oobBeforeSwap", flagSwappedIn);
  document.addEventListener("htmx:oobBeforeSwap", keepDisclosuresOpen);
  document.addEventListener("htmx:afterSettle", function () {
    showJsOnly();
    refreshAges();
    showTimes();
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
