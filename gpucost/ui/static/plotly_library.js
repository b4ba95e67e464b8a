// View of gpucost.ui.chart.PlotlyLibrary: makes plotly.js available to the page's charts through the
// promise window.__gpucostPlotly. Under gpucost's Voila template the page loads plotly.js itself (a
// cacheable <script>) and this does nothing; elsewhere (JupyterLab, another template) it asks the kernel
// for the bundle once and evaluates it.
function shared() {
  const g = globalThis;
  if (!g.__gpucostPlotly) {
    let resolve;
    g.__gpucostPlotly = new Promise((r) => { resolve = r; });
    g.__gpucostPlotly.resolve = resolve;
  }
  return g.__gpucostPlotly;
}

export default {
  initialize({ model }) {
    const p = shared();
    if (p.source) return;  // "template", or already asked for by another library widget
    p.source = "kernel";
    model.on("msg:custom", async (msg) => {
      if (!msg || msg.type !== "plotly-source") return;
      const url = URL.createObjectURL(new Blob([msg.esm], { type: "text/javascript" }));
      try {
        p.resolve((await import(/* webpackIgnore: true */ url)).default);
      } finally {
        URL.revokeObjectURL(url);
      }
    });
    model.send({ type: "need-plotly" });
  },
  render() {},
};
