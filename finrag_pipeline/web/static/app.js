// Draw every plotly figure carried (as escaped JSON) in a data-figure attribute.
function finragDrawFigures(root) {
  if (typeof Plotly === "undefined") return;
  (root || document).querySelectorAll("[data-figure]").forEach(function (el) {
    if (el.dataset.drawn) return;
    var fig = JSON.parse(el.dataset.figure);
    Plotly.newPlot(el, fig.data, fig.layout, {displayModeBar: false, responsive: true});
    el.dataset.drawn = "1";
  });
}
window.addEventListener("load", function () { finragDrawFigures(document); });
document.addEventListener("htmx:afterSwap", function (e) { finragDrawFigures(e.target); });
