// View of gpucost.ui.chart.Chart: draws the `figure` trait ({data, layout}) with plotly.js, which arrives
// once per page (gpucost's Voila template or gpucost.ui.chart.PlotlyLibrary resolve the promise below).
// The view renders at once and draws when plotly.js is there, so the rest of the page does not wait.
function plotly() {
  const g = globalThis;
  if (!g.__gpucostPlotly) {
    let resolve;
    g.__gpucostPlotly = new Promise((r) => { resolve = r; });
    g.__gpucostPlotly.resolve = resolve;
  }
  return g.__gpucostPlotly;
}

const CONFIG = { displaylogo: false, responsive: true };

export default {
  render({ model, el }) {
    let Plotly = null;
    let gone = false;
    const div = document.createElement("div");
    el.appendChild(div);
    let drawn = false;
    const draw = () => {
      if (!Plotly || gone) return Promise.resolve();
      drawn = true;
      const fig = model.get("figure") || {};
      if (!fig.data && !fig.layout) {  // cleared: show nothing rather than empty axes
        Plotly.purge(div);
        div.style.display = "none";
        return Promise.resolve();
      }
      div.style.display = "";
      return Plotly.react(div, fig.data || [], fig.layout || {}, CONFIG);
    };
    // Draw at once what is on screen; charts further down wait until they scroll near or the browser is
    // idle, so a page of many charts shows its text and inputs first.
    const start = (P) => {
      Plotly = P;
      let done = false;
      const first = () => { if (!done) { done = true; seen.disconnect(); draw(); } };
      const seen = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) first(); },
                                             { rootMargin: "200px" });
      seen.observe(el);
      (globalThis.requestIdleCallback || ((f) => setTimeout(f, 200)))(first);
    };
    plotly().then(start);
    const onChange = () => (drawn ? draw() : undefined);  // not drawn yet: the first draw takes the news
    model.on("change:figure", onChange);
    // a chart drawn in a hidden tab has no width: redraw it when it gets one
    const resize = new ResizeObserver(() => { if (Plotly && div.offsetWidth && div.data) Plotly.Plots.resize(div); });
    resize.observe(el);
    return () => {
      gone = true;
      model.off("change:figure", onChange);
      resize.disconnect();
      if (Plotly) Plotly.purge(div);
    };
  },
};
