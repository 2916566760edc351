// The session page shows its last turns; the sentinel above them (#timeline-earlier) loads the ones
// before with htmx when it scrolls into view or is clicked (agents/web/views/history.py).
(function () {
  "use strict";

  // Earlier turns arrive above what the user is reading: keep that where it was. (The timeline does
  // not anchor scrolling itself, see aptix.css.)
  var fromBottom = null;
  document.addEventListener("htmx:beforeSwap", function (e) {
    var target = e.detail.target;
    var timeline = document.getElementById("timeline");
    if (!timeline || !target || !target.classList || !target.classList.contains("timeline-earlier")) return;
    fromBottom = timeline.scrollHeight - timeline.scrollTop;
  });
  document.addEventListener("htmx:afterSwap", function () {
    var timeline = document.getElementById("timeline");
    if (fromBottom === null || !timeline) return;
    timeline.scrollTop = timeline.scrollHeight - fromBottom;
    fromBottom = null;
  });

  // A link to a turn (#turn-<id>) that is not among the turns shown loads earlier ones until it is,
  // then shows it (once: later swaps, such as the live stream's, leave the view alone).
  var seeking = false;
  function seekAnchor() {
    var match = /^#(turn-[0-9a-f]{32})$/.exec(window.location.hash);
    if (!match) return;
    var turn = document.getElementById(match[1]);
    var earlier = document.querySelector("#timeline-earlier a");
    seeking = !turn && !!earlier;
    if (turn) turn.scrollIntoView({block: "start"});
    else if (earlier && window.htmx) htmx.trigger(earlier, "click");
  }
  // The new sentinel is live (htmx has processed it) once the swap settled.
  document.addEventListener("htmx:afterSettle", function () { if (seeking) seekAnchor(); });
  // After aptix.js put the view at the newest turn (this script runs after it).
  document.addEventListener("DOMContentLoaded", seekAnchor);
  window.addEventListener("hashchange", seekAnchor);
})();
