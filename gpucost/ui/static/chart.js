// View of gpucost.ui.chart.Chart: draws the `figure` trait ({data, layout}) with plotly.js, which arrives
// once per page (gpucost's Voila template loads it on request; elsewhere gpucost.ui.chart.PlotlyLibrary
// resolves the promise below). The view renders at once and draws when plotly.js is there, so the rest of
// the page does not wait.
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

// at the latest after 1 s: a browser that is never idle (many pages at once on few cores) still draws
const idle = globalThis.requestIdleCallback
  ? (f) => globalThis.requestIdleCallback(f, { timeout: 1000 })
  : (f) => setTimeout(f, 200);

export default {
  // the kernel re-sends the figure if this model was created with an older one (see gpucost.ui.chart.Chart)
  initialize({ model }) {
    model.send({ type: "revision", revision: model.get("revision") });
  },
  render({ model, el }) {
    let Plotly = null;
    let gone = false;
    let visible = false; // on screen, or within 200 px of it
    let queued = false; // a draw waits for the browser to be idle
    const div = document.createElement("div");
    el.appendChild(div);
    const draw = () => {
      queued = false;
      if (!Plotly || gone) return Promise.resolve();
      const fig = model.get("figure") || {};
      if (!fig.data && !fig.layout) {  // cleared: show nothing rather than empty axes
        Plotly.purge(div);
        div.style.display = "none";
        return Promise.resolve();
      }
      div.style.display = "";
      return Plotly.react(div, fig.data || [], fig.layout || {}, CONFIG);
    };
    // A chart on screen draws at once; one further down (or in a hidden tab) when it comes near the screen
    // or the browser is idle, so a page of many charts shows its text and inputs first and an input change
    // redraws first what the user sees.
    // Near the screen now? The observer's last word may be stale when its callbacks wait for a frame.
    const near = () => {
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.bottom > -200 && r.top < globalThis.innerHeight + 200;
    };
    const schedule = () => {
      if (!Plotly || gone) return;
      if (visible || near()) draw();
      else if (!queued) { queued = true; idle(() => { if (queued) draw(); }); }
    };
    const seen = new IntersectionObserver((entries) => {
      visible = entries[entries.length - 1].isIntersecting;
      if (visible && queued) draw();
    }, { rootMargin: "200px" });
    seen.observe(el);
    const p = plotly();
    if (p.load) idle(() => p.load());  // the page's own loader: evaluate plotly.js once the page is shown
    p.then((P) => { Plotly = P; schedule(); });
    model.on("change:figure", schedule);
    // a chart drawn in a hidden tab has no width: redraw it when it gets one
    const resize = new ResizeObserver(() => { if (Plotly && div.offsetWidth && div.data) Plotly.Plots.resize(div); });
    resize.observe(el);
    return () => {
      gone = true;
      model.off("change:figure", schedule);
      seen.disconnect();
      resize.disconnect();
      if (Plotly) Plotly.purge(div);
    };
  },
};
