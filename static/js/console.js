// Keyboard use of the console's queues: j / k move between items, Enter opens
// the focused one (a real link, so the browser does it), x ticks its
// checkbox, / jumps to the search or first filter. Loaded from static, so the
// CSP needs no inline script. Everything here is an extra: without it every
// row is still a link and every action a form.
(function () {
  "use strict";

  function items() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-queue-item]"));
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

  function typing(event) {
    var t = event.target;
    var tag = t && t.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (t && t.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event)) return;
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
        event.preventDefault();
      }
    } else if (event.key === "/") {
      var search = document.querySelector("input[type=search], form.filters input, form.filters select");
      if (search) {
        search.focus();
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
})();
