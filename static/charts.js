// Draws each plotly figure of the page: <div class="chart" data-figure="ID"> takes the figure
// from <script id="ID" type="application/json">, which the server wrote with json_script.
// A point whose customdata is a site path (a run page) opens it when clicked.
(function () {
  "use strict";
  var CONFIG = {
    displaylogo: false,
    responsive: true,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
  };

  function sitePath(point) {
    var data = point && point.customdata;
    var path = Array.isArray(data) ? data[0] : data;
    return typeof path === "string" && path.charAt(0) === "/" && path.charAt(1) !== "/" ? path : null;
  }

  // On a narrow screen a legend beside the plot leaves the plot no room: it goes below, and
  // the figure grows by its lines.
  var NARROW_PX = 600;
  function fitLegend(figure, width) {
    var legend = figure.layout.legend;
    if (width >= NARROW_PX || !legend || legend.orientation !== "v") return;
    var items = figure.data.filter(function (trace) { return trace.showlegend !== false; });
    figure.layout.legend = Object.assign({}, legend, {
      orientation: "h", x: 0, xanchor: "left", y: -0.25, yanchor: "top",
    });
    figure.layout.height = (figure.layout.height || 360) + 22 * items.length;
  }

  function draw(element) {
    var source = document.getElementById(element.dataset.figure);
    if (!source) return;
    var figure = JSON.parse(source.textContent);
    fitLegend(figure, element.clientWidth);
    Plotly.newPlot(element, figure.data, figure.layout, CONFIG).then(function () {
      element.classList.add("drawn");
      element.on("plotly_click", function (event) {
        var path = sitePath(event.points && event.points[0]);
        if (path) window.location.assign(path);
      });
    });
  }

  document.querySelectorAll(".chart[data-figure]").forEach(draw);
})();
