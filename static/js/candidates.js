// The Candidates queue's extras: a select-all box, a live "N selected" count,
// and the row's "Ground for the selected" link moving focus to that field.
// Without JavaScript the boxes still tick and the batch form still posts;
// the select-all box and the count stay hidden. Listeners sit on the
// document, so they keep working after htmx swaps the list.
(function () {
  "use strict";

  function boxes() {
    return Array.prototype.slice.call(
      document.querySelectorAll("#candidate-table tbody input[type=checkbox][name=facts]")
    );
  }

  function refresh() {
    var all = boxes();
    var ticked = all.filter(function (box) { return box.checked; }).length;
    var count = document.getElementById("selected-count");
    if (count) {
      count.hidden = false;
      count.textContent = ticked + " selected";
    }
    var every = document.getElementById("select-all");
    if (every) {
      every.hidden = all.length === 0;
      every.checked = all.length > 0 && ticked === all.length;
      every.indeterminate = ticked > 0 && ticked < all.length;
    }
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.id === "select-all") {
      boxes().forEach(function (box) { box.checked = target.checked; });
      refresh();
    } else if (target.name === "facts") {
      refresh();
    }
  });

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a.to-batch");
    if (!link) return;
    var field = document.getElementById("id_batch_ground");
    if (field) {
      event.preventDefault();
      field.focus();
    }
  });

  document.addEventListener("DOMContentLoaded", refresh);
  document.addEventListener("htmx:afterSettle", refresh);
})();
