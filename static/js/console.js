// Keyboard use of the console. Loaded from static, so the CSP needs no inline
// script. Everything here is an extra: without it every row is still a link
// and every action a form.
//
// Moving: j / k between the items of a queue ([data-queue-item]), Enter opens
// the focused one (a real link, so the browser does it), x ticks its checkbox,
// / jumps to the header's search box (else a page's search or first filter), ? opens the list of keys.
//
// Acting (the shared convention): an element carrying data-key="<key>" starts
// an action. On a <details> the key opens it and focuses its first field. On a
// <button> or <a> the key clicks it, except when the button's form still has
// an empty reason field: then the key focuses that field and "arms" the
// button, and Ctrl+Enter in the field clicks it. Inside a queue, a [data-key]
// in the current row wins over one elsewhere on the page. Keys never fire
// while typing in a field; Ctrl+Enter (or Cmd+Enter) submits the field's form.
(function () {
  "use strict";

  var FIELDS = "textarea, input:not([type=hidden]):not([type=checkbox]):not([type=radio]):not([type=submit]), select";

  function toArray(list) {
    return Array.prototype.slice.call(list);
  }

  function items() {
    return toArray(document.querySelectorAll("[data-queue-item]"));
  }

  function current(list) {
    var active = document.activeElement;
    for (var i = 0; i < list.length; i++) {
      if (list[i] === active || list[i].contains(active)) return i;
    }
    return -1;
  }

  function focusItem(item) {
    var target = item.querySelector("a.row-link, a[href]") || item;
    if (target === item && !item.hasAttribute("tabindex")) item.setAttribute("tabindex", "-1");
    target.focus();
    item.scrollIntoView({ block: "nearest" });
  }

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  function shown(element) {
    if (element.closest("[hidden]") || element.disabled) return false;
    // A button inside a closed <details> is not on screen; its <summary> is.
    var details = element.parentElement && element.parentElement.closest("details:not([open])");
    return !details || details.querySelector("summary") === element;
  }

  // The element a key starts: in the current queue row first, else one that
  // belongs to no row (a row's button never fires from outside its row).
  function actionFor(key) {
    var all = toArray(document.querySelectorAll("[data-key]")).filter(function (element) {
      return element.getAttribute("data-key") === key && shown(element);
    });
    var list = items();
    var index = current(list);
    if (index >= 0) {
      var row = list[index];
      var inRow = all.filter(function (element) { return row.contains(element); });
      if (inRow.length) return inRow[0];
    }
    var loose = all.filter(function (element) { return !element.closest("[data-queue-item]"); });
    return loose[0] || null;
  }

  function emptyField(form) {
    if (!form) return null;
    return toArray(form.querySelectorAll("textarea, input[type=text]")).filter(function (field) {
      return !field.disabled && !field.readOnly && field.value.trim() === "";
    })[0] || null;
  }

  function disarm() {
    toArray(document.querySelectorAll(".is-armed")).forEach(function (button) {
      button.classList.remove("is-armed");
    });
  }

  function start(element) {
    if (element.tagName === "DETAILS") {
      element.open = true;
      var first = element.querySelector(FIELDS);
      (first || element.querySelector("summary")).focus();
      return;
    }
    var field = element.tagName === "BUTTON" ? emptyField(element.form) : null;
    if (field) {
      disarm();
      element.classList.add("is-armed");
      field.focus();
      return;
    }
    element.click();
  }

  function submitFrom(field) {
    var form = field.form || field.closest("form");
    if (!form) return false;
    var armed = form.querySelector("button.is-armed");
    var submitter = armed || form.querySelector("button[type=submit], button:not([type]), input[type=submit]");
    // A click, not requestSubmit(): htmx sends the name/value of the button it
    // saw clicked (Admit or Reject), as the browser does without JavaScript.
    if (submitter) {
      submitter.click();
    } else if (form.requestSubmit) {
      form.requestSubmit();
    } else {
      form.submit();
    }
    return true;
  }

  function helpDialog() {
    return document.getElementById("keys-help");
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && typing(event.target)) {
      if (submitFrom(event.target)) event.preventDefault();
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    var dialog = helpDialog();
    if (dialog && dialog.open) return; // the dialog has its own keys: Esc, Tab, Enter
    var list = items();
    var index = current(list);
    if (event.key === "j" || event.key === "k") {
      if (!list.length) return;
      var step = event.key === "j" ? 1 : -1;
      var next = index < 0 ? 0 : Math.min(list.length - 1, Math.max(0, index + step));
      focusItem(list[next]);
      event.preventDefault();
    } else if (event.key === "x" && index >= 0) {
      var box = list[index].querySelector("input[type=checkbox]");
      if (box) {
        box.checked = !box.checked;
        box.dispatchEvent(new Event("change", { bubbles: true }));
        event.preventDefault();
      }
    } else if (event.key === "/") {
      // The header's search box first (every page but the results page,
      // whose own form holds the query), then a page's search or filter.
      var search = document.querySelector("#site-search-q, input[type=search], form.filters input, form.filters select");
      if (search) {
        search.focus();
        event.preventDefault();
      }
    } else if (event.key === "?") {
      if (dialog && dialog.showModal) {
        dialog.showModal();
        event.preventDefault();
      }
    } else if (event.key.length === 1) {
      var action = actionFor(event.key);
      if (action) {
        start(action);
        event.preventDefault();
      }
    }
  });

  // A row is highlighted while anything inside it has focus.
  document.addEventListener("focusin", function (event) {
    items().forEach(function (item) {
      item.classList.toggle("is-current", item.contains(event.target));
    });
  });

  // --- htmx answers: say what happened, keep the focus somewhere sensible -------------

  function region() {
    return document.getElementById("messages");
  }

  function say(words, tags) {
    var where = region();
    if (!where) return null;
    var list = document.createElement("ul");
    list.className = "messages";
    var item = document.createElement("li");
    item.className = "message " + tags;
    item.setAttribute("tabindex", "-1");
    item.textContent = words;
    list.appendChild(item);
    where.replaceChildren(list);
    return item;
  }

  function lostFocus() {
    var active = document.activeElement;
    return !active || active === document.body || !active.isConnected;
  }

  function focusHere(element) {
    if (!element) return false;
    if (!element.matches("a[href], button, input, select, textarea, [tabindex]")) {
      element.setAttribute("tabindex", "-1");
    }
    element.focus();
    return true;
  }

  // The answers the console gives on purpose (a form with its errors, a refusal)
  // never reach django-htmx's DEBUG helper, which would replace the whole document
  // with them; a 500 still does, to show Django's technical page. The listener sits
  // on <html>, so it runs before django-htmx's on the document.
  document.documentElement.addEventListener("htmx:beforeOnLoad", function (event) {
    var status = event.detail.xhr && event.detail.xhr.status;
    if (status === 400 || status === 403 || status === 404) event.stopPropagation();
  });

  var settled = typeof WeakSet === "function" ? new WeakSet() : null;

  document.addEventListener("htmx:afterSettle", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || !settled || settled.has(xhr)) return;
    settled.add(xhr);
    if (xhr.status === 400) {
      // The form came back with its errors: focus the first field in error.
      var scope = event.detail.target && event.detail.target.isConnected ? event.detail.target : document;
      var field = scope.querySelector("[aria-invalid=true], .has-error textarea, .has-error input, .has-error select");
      focusHere(field || scope.querySelector(".errorlist, .error"));
    } else if (lostFocus()) {
      // The swap took the focused form away: land on what the action did.
      var message = document.querySelector("#messages .message");
      focusHere(message || (event.detail.target && event.detail.target.isConnected ? event.detail.target : null));
    }
  });

  // An answer htmx does not swap (403, 404, 409, 5xx): its words, in the status region.
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var words = "That was not done (the server answered " + xhr.status + ").";
    try {
      var page = new DOMParser().parseFromString(xhr.responseText, "text/html");
      var reason = page.querySelector("main [role=alert], main .error");
      if (reason && reason.textContent.trim()) words = "That was not done: " + reason.textContent.trim();
    } catch (ignored) { /* keep the plain words */ }
    focusHere(say(words, "error"));
  });

  document.addEventListener("htmx:sendError", function () {
    focusHere(say("The console could not be reached; nothing was done. Try again.", "error"));
  });

  // A button armed by its key stays armed only while focus is in its form.
  document.addEventListener("focusin", function (event) {
    toArray(document.querySelectorAll(".is-armed")).forEach(function (button) {
      if (!button.form || !button.form.contains(event.target)) button.classList.remove("is-armed");
    });
  });

  // --- the keyboard hint: only where the keys act (a queue or an action key) -----------

  function showKeysHint() {
    var hint = document.getElementById("keys-hint");
    if (hint) hint.hidden = !document.querySelector("[data-queue-item], [data-key]");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", showKeysHint);
  } else {
    showKeysHint();
  }
  document.addEventListener("htmx:afterSettle", showKeysHint);
})();
