// gpucost: keep the visitor's language, currency and market across pages and reloads, in the visitor's browser.
// The page's kernel holds `lang` and `currency`; this view mirrors them into the URL (so a reload or a
// shared link keeps them) and into localStorage (so a bare link to another page starts with them).
const KEY = "gpucost.prefs";

function read() {
  try { return JSON.parse(window.localStorage.getItem(KEY) || "{}") || {}; } catch (e) { return {}; }
}

export default {
  render({ model }) {
    const url = new URL(window.location.href);
    const stored = read();
    let restoring = false;
    if (!url.searchParams.has("lang") && stored.lang && stored.lang !== model.get("lang")) {
      restoring = true;  // ask the kernel to switch; write nothing until it has
      model.set("restore", { lang: stored.lang, currency: stored.currency || "", market: stored.market || "" });
      model.save_changes();
    }
    const sync = () => {
      restoring = false;
      const lang = model.get("lang"), currency = model.get("currency"), market = model.get("market");
      try { window.localStorage.setItem(KEY, JSON.stringify({ lang, currency, market })); } catch (e) { /* private mode */ }
      const u = new URL(window.location.href);
      u.searchParams.set("lang", lang);
      u.searchParams.set("currency", currency);
      if (market && market !== "auto") u.searchParams.set("market", market); else u.searchParams.delete("market");
      window.history.replaceState(window.history.state, "", u.toString());
    };
    model.on("change:lang", sync);
    model.on("change:currency", sync);
    model.on("change:market", sync);
    if (!restoring) sync();
  },
};
