"""Cloud prices from gpuhunt's and SkyPilot's catalog formats, the local price store and the user's market.
No network: gpuhunt reads a catalog written by its own storage functions (GPUHUNT_CATALOG_DIR); SkyPilot
rows are real vms.csv lines (tests/fixtures/skypilot); 'offline' is a closed local port."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from gpucost.catalog import Catalog
from gpucost.offers import market_of, resolve_gpu, skypilot_offers
from tests.conftest import run_cli

SKY = Path(__file__).parent / "fixtures" / "skypilot"


@pytest.fixture(scope="module")
def cat():
    return Catalog()


def test_markets_follow_region_and_currency():
    assert market_of("us-east-1") == "us" and market_of("Oregon, US, NA") == "us"
    assert market_of("eu-west-1") == "eu" and market_of("europe-central-1") == "eu"
    assert market_of("cn-north-1") == "china" and market_of("CN", "USD") == "china"
    assert market_of("anything", "CNY") == "china"            # priced in yuan: a Chinese cloud
    assert market_of("ap-northeast-1") == "apac" and market_of("global") == ""


def test_names_resolve_by_memory_and_instance_never_by_guess(cat):
    assert resolve_gpu("A100", 40, "gpu_1x_a100", cat) == "a100-40gb-sxm"
    assert resolve_gpu("A100", 80, "a2-ultragpu-1g", cat) == "a100-80gb-sxm"
    assert resolve_gpu("A100", 80, "a100-80gb-pcie", cat) == "a100-80gb-pcie"
    assert resolve_gpu("H100", 94, "1x-H100_NVL", cat) == "h100-nvl"
    assert resolve_gpu("RTX4070", 16, "4x-RTX_4070S_Ti", cat) == "rtx-4070-ti-super"   # vast's name for it
    assert resolve_gpu("RTX4090", 24, "", cat) == "rtx-4090"
    assert resolve_gpu("RTX5880-Ada", 48, "", cat) is None                            # not in gpus.csv
    assert resolve_gpu("H100", None, "", cat) is None or resolve_gpu("H100", None, "", cat) == "h100-sxm"


def test_skypilot_rows_read_by_header_with_each_clouds_memory_convention(cat):
    got = {}
    for cloud in ("vast", "runpod", "lambda", "primeintellect"):
        vms = pd.read_csv(SKY / cloud / "vms.csv", dtype=str, keep_default_na=False)
        got[cloud] = skypilot_offers(vms, cloud, "2026-12-01T00:00:00Z", "fixture", cat)
    vast = got["vast"]
    assert {o.gpu_id for o in vast} == {"rtx-4090", "rtx-4070-ti-super"}      # MiB summed over the GPUs
    assert next(o for o in vast if o.gpu_id == "rtx-4090").price_per_gpu_hour == pytest.approx(0.40)
    assert not any(o.spot for o in vast)                                       # SpotPrice 0.00 is no offer
    runpod = got["runpod"]                                                     # 'SizeInMiB': 80 means GB
    assert {o.gpu_id for o in runpod} == {"a100-80gb-pcie"} and {o.spot for o in runpod} == {False, True}
    assert {o.gpu_id for o in got["lambda"]} == {"h100-pcie"}
    assert {o.gpu_id for o in got["primeintellect"]} == {"h100-sxm"}           # SizeInMiB of all 8 GPUs
    assert got["primeintellect"][0].price_per_gpu_hour == pytest.approx(23.92 / 8)


def _write_gpuhunt(folder: Path, rows: list[tuple]) -> None:
    """A gpuhunt v2 catalog file per provider, written by gpuhunt's own storage.dump."""
    from gpuhunt import AcceleratorVendor, CatalogItem
    from gpuhunt._internal import storage

    folder.mkdir(parents=True, exist_ok=True)
    by_provider: dict[str, list] = {}
    for provider, inst, loc, price, count, name, mem, spot in rows:
        by_provider.setdefault(provider, []).append(CatalogItem(
            provider=provider, instance_name=inst, location=loc, price=price, cpu=8, memory=64, gpu_count=count,
            gpu_name=name, gpu_memory=mem, spot=spot, disk_size=None, gpu_vendor=AcceleratorVendor.NVIDIA))
    for provider, items in by_provider.items():
        storage.dump(items, str(folder / f"{provider}.csv"))


def _env(tmp_path: Path, catalog_dir: Path) -> dict:
    return {"GPUCOST_PRICE_STORE": str(tmp_path / "prices.sqlite3"), "GPUHUNT_CATALOG_DIR": str(catalog_dir)}


def _cloud_price(env: dict, gpu: str, currency: str = "USD", *market: str) -> dict:
    p = run_cli("prices", "show", "--gpu", gpu, "--currency", currency, *market, "--json", env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_an_update_prices_what_the_users_market_can_rent_and_keeps_history(tmp_path):
    pytest.importorskip("gpuhunt")
    cat_dir = tmp_path / "gpuhunt"
    env = _env(tmp_path, cat_dir)
    before = _cloud_price(env, "l40s")["cheapest"]
    # a cheaper L40S in Europe (the global market) and a much cheaper one in mainland China (not rentable
    # with a US account); and a provider whose file is broken
    _write_gpuhunt(cat_dir, [("aws", "g6e.xlarge", "eu-west-1", before * 0.5, 1, "L40S", 48, False),
                             ("aws", "g6e.xlarge", "eu-west-1", before * 0.2, 1, "L40S", 48, True),
                             ("nebius", "gpu-l40s-a", "cn-north-1", before * 0.1, 1, "L40S", 48, False)])
    (cat_dir / "oci.csv").write_text("instance_name,location,price\nbroken,row\n")
    up = run_cli("prices", "update", "--no-skypilot", "--json", env=env)
    assert up.returncode == 0, up.stderr
    res = json.loads(up.stdout)
    by = {p["provider"]: p for p in res["providers"]}
    assert by["aws"]["mapped"] == 2 and by["nebius"]["mapped"] == 1   # the broken oci file stops nobody
    assert by["oci"]["error"] or by["oci"]["offers"] == 0
    now = _cloud_price(env, "l40s")
    assert now["cheapest"] == pytest.approx(before * 0.5) and "aws g6e.xlarge" in now["cheapest_offer"]
    assert now["market"] == "global"                                  # the China offer is not the price
    cny = _cloud_price(env, "l40s", "CNY")
    assert cny["market"] == "china" and "nebius" in cny["cheapest_offer"]
    # a user who rents in the US: the new European offer is not their price (the old one stays)
    us = _cloud_price(env, "l40s", "USD", "--market", "us")
    assert us["market"] == "us" and us["cheapest"] == pytest.approx(before) and "g6e" not in us["cheapest_offer"]
    # a second update a day later at a new price: both observations stay
    _write_gpuhunt(cat_dir, [("aws", "g6e.xlarge", "eu-west-1", before * 0.6, 1, "L40S", 48, False)])
    assert run_cli("prices", "update", "--no-skypilot", "--json", env=env).returncode == 0
    hist = json.loads(run_cli("prices", "history", "--gpu", "l40s", "--json", env=env).stdout)["observations"]
    ondemand = [o["per_gpu"] for o in hist if o["origin"] == "store" and o["provider"] == "aws" and not o["spot"]]
    assert ondemand == pytest.approx(sorted([before * 0.5, before * 0.6]))
    assert _cloud_price(env, "l40s")["cheapest"] == pytest.approx(before * 0.6)   # the newest observation
    # the card listing uses the same price
    gpus = json.loads(run_cli("gpus", "--json", env=env).stdout)
    assert next(g for g in gpus if g["id"] == "l40s")["cloud_hourly"] == pytest.approx(before * 0.6)


def test_skypilot_folder_update_and_offline_in_one_line(tmp_path):
    env = {"GPUCOST_PRICE_STORE": str(tmp_path / "p.sqlite3")}
    up = run_cli("prices", "update", "--no-gpuhunt", "--skypilot", str(SKY), "--json", env=env)
    res = json.loads(up.stdout)
    assert {p["provider"] for p in res["providers"]} == {"vast", "runpod", "lambda", "primeintellect"}
    assert res["observations_added"] == res["offers_seen"] > 0
    # without --json: a line per provider as it arrives, with how far the update is, then what changed
    text = run_cli("prices", "update", "--no-gpuhunt", "--skypilot", str(SKY),
                   env={"GPUCOST_PRICE_STORE": str(tmp_path / "text.sqlite3")})
    lines = text.stderr.splitlines()
    assert [ln[:7] for ln in lines] == ["[ 1/4] ", "[ 2/4] ", "[ 3/4] ", "[ 4/4] "] and "vast" in text.stderr
    assert text.stdout.startswith(f"{res['offers_seen']} offers seen")
    off = run_cli("prices", "update", "--skypilot", "http://127.0.0.1:9",
                  env={**env, "GPUHUNT_CATALOG_URL": "http://127.0.0.1:9", "GPUHUNT_CATALOG_DIR": ""}, timeout=120)
    assert off.returncode == 0 and off.stdout.count("\n") == 1 and off.stdout.startswith("offline")
    assert off.stderr == ""
    again = json.loads(run_cli("prices", "history", "--gpu", "rtx-4090", "--json", env=env).stdout)
    assert sum(o["origin"] == "store" for o in again["observations"]) == 2   # kept what it had


def test_bundled_prices_are_chosen_within_the_market(cat):
    """The bundled snapshot: a US user's T4 price is not AWS China's yuan price (the cheapest in CNY terms
    is not what a US user can rent); a Chinese user's is. A card with no dated offer in China (the RTX 4090
    since the undated marketplace rows were dropped) gets the cheapest anywhere, marked outside."""
    from gpucost.pricing import price_index

    usd, cny = price_index(cat, "USD").loc["t4"], price_index(cat, "CNY").loc["t4"]
    assert cny["cloud_market"] == "china" and cny["cloud_offer"].startswith("aws-china")
    assert usd["cloud_market"] != "china" and not usd["cloud_offer"].startswith("aws-china")
    assert usd["cloud_median"] >= usd["cloud_hourly"] and usd["cloud_offers"] >= 2
    assert price_index(cat, "CNY").loc["rtx-4090", "cloud_market"] == "outside china"


def _offers(rows: list[tuple]) -> pd.DataFrame:
    """A cloud_offers table of (provider, region, currency, price per GPU-hour, provider_kind[, as_of]) for
    an L4."""
    return pd.DataFrame([{"provider": r[0], "InstanceType": f"{r[0]}-l4-{r[1]}", "AcceleratorName": "L4",
                          "AcceleratorCount": 1, "Price": r[3], "Region": r[1], "currency": r[2], "gpu_id": "l4",
                          "source": f"test {r[0]}", "as_of": r[5] if len(r) > 5 else "2026-11-30",
                          "provider_kind": r[4]} for r in rows])


def test_each_market_prices_a_card_with_its_own_offers(cat):
    """Where the user rents decides the price: the cheapest offer of their region (a marketplace listing
    with no region counts anywhere but China), marketplaces out when they say so, yuan offers only for
    China; a region with no offer gets the cheapest one they can rent elsewhere, marked outside. The
    median is the market's, over offers dated within a year of the newest."""
    from gpucost.offers import Market
    from gpucost.pricing import card_price, price_index

    offers = _offers([("aws", "us-east-1", "USD", 0.80, "hyperscaler"), ("lambda", "us-south-1", "USD", 0.60, ""),
                      ("nebius", "eu-north1", "USD", 0.70, "neocloud"), ("vast", "", "USD", 0.30, "marketplace"),
                      ("alibaba", "cn-beijing", "CNY", 1.00, "hyperscaler"),   # 1 CNY: the cheapest in money
                      ("tencent", "cn-mainland", "CNY", 0.50, "hyperscaler", "2020-07-15")])  # a 2020 list price
    c = cat.with_table("cloud_offers", offers)

    def row(region: str, marketplaces: bool = True, currency: str = "USD", kinds: tuple[str, ...] = ()):
        kinds = kinds or (("hyperscaler", "neocloud", "marketplace") if marketplaces else ("hyperscaler", "neocloud"))
        return price_index(c.with_market(Market(region, kinds)), currency).loc["l4"]

    assert row("us")["cloud_hourly"] == pytest.approx(0.30) and row("us")["cloud_offer"].startswith("vast")
    us = row("us", marketplaces=False)
    assert us["cloud_hourly"] == pytest.approx(0.60) and us["cloud_offer"].startswith("lambda")
    assert us["cloud_median"] == pytest.approx(0.70) and us["cloud_offers"] == 2 and us["cloud_market"] == "us"
    assert row("eu", marketplaces=False)["cloud_hourly"] == pytest.approx(0.70)
    apac = row("apac", marketplaces=False)                       # none there: the cheapest one can rent
    assert apac["cloud_hourly"] == pytest.approx(0.60) and apac["cloud_market"] == "outside apac"
    cny = row("china", currency="CNY")
    assert cny["cloud_hourly"] == pytest.approx(1.00) and cny["cloud_offer"].startswith("alibaba")
    assert cny["cloud_offers"] == 1                      # the 2020 price is not today's, with a 2026 offer
    assert row("auto", currency="CNY")["cloud_hourly"] == pytest.approx(1.00)        # CNY → China
    assert row("auto", marketplaces=False)["cloud_hourly"] == pytest.approx(0.60)     # USD → global
    hyper = row("us", kinds=("hyperscaler",))                 # a hyperscaler-only procurement rule
    assert hyper["cloud_hourly"] == pytest.approx(0.80) and hyper["cloud_offer"].startswith("aws")
    # the engines read the same number through the one price lookup
    eu = c.with_market(Market("eu", ("hyperscaler", "neocloud")))
    assert card_price(eu, "l4", "USD", "cloud")[0] == pytest.approx(0.70)


def test_provider_kinds_on_the_command_line():
    """A hyperscaler-only buyer: `prices show --provider-kinds hyperscaler` prices an L4 from a hyperscaler
    (the bundled snapshot's cheapest AWS/GCP/Azure/OCI L4 in the US); a misspelt kind is one line naming the
    closest, exit 2."""
    from gpucost.markets import HYPERSCALERS

    p = run_cli("prices", "show", "--gpu", "l4", "--market", "us", "--provider-kinds", "hyperscaler", "--json")
    r = json.loads(p.stdout)
    assert r["provider_kinds"] == ["hyperscaler"] and r["cheapest_offer"].split()[0] in HYPERSCALERS
    bad = run_cli("prices", "show", "--gpu", "l4", "--provider-kinds", "hyperscalr")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "closest: hyperscaler" in bad.stderr


def test_the_market_is_a_page_setting_kept_in_links_and_records(cat):
    """Page 01: the market chosen next to the inputs prices the page (record, as-of line, links to the
    other pages); a link naming a market opens in it; auto follows the language's currency."""
    from gpucost.ui.card_choice import CardChoicePage

    page = CardChoicePage(catalog=cat.with_table("cloud_offers", _offers(
        [("nebius", "eu-north1", "USD", 0.70, "neocloud"), ("lambda", "us-south-1", "USD", 0.60, "neocloud")])))
    page.basis.value = "cloud"
    assert page.results_record()["market"] == "global"
    page.market_dd.value = "eu"
    rec = page.results_record()
    assert rec["market"] == "eu" and not rec["stale"]
    assert next(c for c in rec["cards"] if c["id"] == "l4")["price"] == pytest.approx(0.70)
    assert "the Europe market (1 offers" in page.asof.value and "market=eu" in page.page_link("tco")
    # the price history of the best card: both offers on record, one in the user's market
    assert rec["history"] == {"gpu": "l4", "points": 2, "in_market": 1, "newest": "2026-11-30"}
    assert len(page.history_fig.data) == 2 and "2 prices on record, 1 of them in your market" in page.history_note.value
    page.market_kinds["marketplace"].value = False
    key = "eu:hyperscaler+neocloud"
    assert page.state.market == key and page.prefs.market == key and f"market={key}".replace(":", "%3A").replace(
        "+", "%2B") in page.page_link("tco")
    # no kind of provider left: a message next to the boxes, the results marked out of date, the last prices
    page.market_kinds["hyperscaler"].value = page.market_kinds["neocloud"].value = False
    rec = page.results_record()
    assert rec["stale"] and "market" in rec["invalid"] and "at least one kind" in page.market_msg.value
    assert rec["market"] == "eu:neocloud"          # the last market with a kind in it
    page.lang_toggle.value = "zh"                   # the message follows the language; the choice stays
    assert "请至少选择一类服务商" in page.market_msg.value and page.market_dd.value == "eu"
    page.lang_toggle.value = "en"
    page.market_kinds["neocloud"].value = True
    assert not page.results_record()["stale"] and page.market_msg.value == ""
    page.apply_url_params({"market": "us-no-marketplaces"})          # the older link form still opens
    assert page.state.market == "us:hyperscaler+neocloud"
    page.apply_url_params({"market": "us"})
    assert page.market_dd.value == "us" and all(b.value for b in page.market_kinds.values())
    assert next(c for c in page.results_record()["cards"] if c["id"] == "l4")[
        "price"] == pytest.approx(0.60)
    page.apply_url_params({"market": "moon"})                     # ignored, like any invalid URL value
    assert page.state.market == "us"
    page.market_dd.value = "auto"
    page.lang_toggle.value = "zh"
    assert page.results_record()["market"] == "china"
    assert "中国大陆市场没有报价" in page.asof.value


def test_a_price_upload_stands_in_for_its_cards_and_keeps_the_rest():
    """Page 01: uploading one price row changes that card's price, replaces the bundled rows it stands for
    and keeps every other card's prices (it used to replace the whole table: '1 cards match')."""
    from gpucost.ui.card_choice import CardChoicePage

    page = CardChoicePage()
    before = page.catalog.prices
    n_4090_new = int(((before["gpu_id"] == "rtx-4090") & (before["condition"] == "new")).sum())
    row = (b"gpu_id,condition,price,currency,region,channel,source,as_of,notes\n"
           b"rtx-4090,new,1234,USD,US,retail,my supplier's quote,2026-11-20,\n")
    page._on_upload({"new": [{"name": "mine.csv", "content": row}]})
    after = page.catalog.prices
    assert len(after) == len(before) - n_4090_new + 1
    mine = after[(after["gpu_id"] == "rtx-4090") & (after["condition"] == "new")]
    assert list(mine["price"]) == [1234]
    assert set(after["gpu_id"]) == set(before["gpu_id"])                  # every other card keeps its prices
    assert f"standing in for {n_4090_new} bundled prices" in page.upload_msg.value
    assert "Cloud prices: the global (outside mainland China) market" in page.asof.value


@pytest.mark.internet
@pytest.mark.timeout(900)
def test_a_live_update_reads_the_published_catalogs(tmp_path):
    """Opt-in (GPUCOST_INTERNET_TESTS=1): gpuhunt's and SkyPilot's published catalogs, read as a user's
    `gpucost prices update` reads them, give current offers for several providers, and the H100 then has a
    cloud price observed today."""
    from datetime import date

    env = {"GPUCOST_PRICE_STORE": str(tmp_path / "prices.sqlite3")}
    up = run_cli("prices", "update", "--json", env=env, timeout=900)
    assert up.returncode == 0, up.stderr
    res = json.loads(up.stdout)
    assert not res["offline"]
    live = [p["provider"] for p in res["providers"] if p["mapped"]]
    assert len(live) >= 3, res["providers"]
    hist = json.loads(run_cli("prices", "history", "--gpu", "h100-sxm", "--json", env=env).stdout)["observations"]
    today = [o for o in hist if str(o["observed_at"]).startswith(date.today().isoformat())]
    assert today and all(o["price_per_gpu_hour"] > 0 for o in today)


# ---------------------------------------------------------------------------------------------------
# One market for renting and buying: street prices are chosen in the user's market
# ---------------------------------------------------------------------------------------------------

def _fx_rates() -> dict[str, float]:
    """data/fx.csv read here, not through the catalog: units per USD."""
    import csv

    with open(Path(__file__).parents[1] / "data" / "fx.csv", encoding="utf-8") as f:
        return {r["currency"]: float(r["per_usd"]) for r in csv.DictReader(f)}


def _hand_median(gpu: str, condition: str, keep) -> float:
    """A card's street price in USD computed here from data/prices.csv: its per-card rows (no server
    quotes) that ``keep(row)`` admits, converted at fx.csv's rate, dated within 365 days of the newest."""
    import csv
    import statistics
    from datetime import date, timedelta

    rates = _fx_rates()
    with open(Path(__file__).parents[1] / "data" / "prices.csv", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["gpu_id"] == gpu and r["condition"] == condition
                and r["channel"] != "server-quote" and keep(r)]
    newest = max(date.fromisoformat(r["as_of"]) for r in rows)
    return statistics.median(float(r["price"]) / rates[r["currency"]] for r in rows
                             if date.fromisoformat(r["as_of"]) >= newest - timedelta(days=365))


def _china(r: dict) -> bool:
    return r["region"] == "CN" or r["currency"] == "CNY"


@pytest.mark.parametrize("region", ["global", "us", "eu", "china"])
def test_one_markets_street_prices_in_usd_eur_and_cny_differ_by_one_rate(cat, region):
    """With the market fixed, every card's new and used price in EUR and CNY is its USD price times the
    fx.csv rate: the currency converts, it does not choose other quotes."""
    from gpucost.offers import Market
    from gpucost.pricing import price_index

    rates = _fx_rates()
    c = cat.with_market(Market(region))
    usd = price_index(c, "USD")
    for cur in ("EUR", "CNY"):
        other = price_index(c, cur)
        for col in ("price_new", "price_used"):
            priced = usd[col].notna()
            assert priced.sum() > 10 and other[col].notna().equals(priced)
            for gid in usd.index[priced]:
                assert other.loc[gid, col] == pytest.approx(usd.loc[gid, col] * rates[cur], rel=1e-12), (gid, cur)
            assert other[f"{col}_market"].equals(usd[f"{col}_market"])


def test_buying_follows_the_market_not_the_currency(cat):
    """`--currency CNY --market global` buys an RTX 4090 at the global price in yuan (it used to take the
    China street price: buying followed the currency, renting the market); `--market china` (and auto
    with CNY) at the China quotes; the CLI says the same."""
    from gpucost.offers import Market
    from gpucost.pricing import card_prices

    rate = _fx_rates()["CNY"]
    global_usd = _hand_median("rtx-4090", "new", lambda r: not _china(r))      # 1800, 2000, 2200, 2800
    china_usd = _hand_median("rtx-4090", "new", _china)                       # 15000, 26000, 40000 CNY
    assert global_usd == pytest.approx(2100) and china_usd * rate == pytest.approx(26000)
    in_global = card_prices(cat.with_market(Market("global")), "CNY")["rtx-4090"].new
    assert in_global.value == pytest.approx(global_usd * rate, rel=1e-12) and in_global.market == "global"
    assert not in_global.local                                       # USD quotes: it moves with the rate
    for c in (cat.with_market(Market("china")), cat):                 # auto: CNY → China, as before
        q = card_prices(c, "CNY")["rtx-4090"].new
        assert q.value == pytest.approx(china_usd * rate, rel=1e-12) and q.market == "china" and q.local
    assert card_prices(cat, "USD")["rtx-4090"].new.value == pytest.approx(global_usd, rel=1e-12)
    shown = {g["id"]: g for g in json.loads(run_cli("gpus", "--currency", "CNY", "--market", "global",
                                                    "--json").stdout)}["rtx-4090"]
    assert shown["price_new"] == pytest.approx(global_usd * rate, rel=1e-12) and shown["price_new_market"] == "global"


def test_a_card_with_no_quote_in_the_market_is_priced_elsewhere_marked_outside(cat):
    """Like offers: a card's quotes in the market when it has any; else its quotes outside mainland China
    (for a user outside it); else any (a China-only card keeps a price) — converted, marked outside."""
    from gpucost.offers import Market
    from gpucost.pricing import card_prices, market_summary

    def q(gpu, price, currency, region, as_of="2026-06-01", condition="new"):
        return {"gpu_id": gpu, "condition": condition, "price": float(price), "currency": currency,
                "region": region, "channel": "retail", "source": f"test {gpu} {region}", "as_of": as_of, "notes": ""}
    prices = pd.DataFrame([q("l4", 1000, "USD", "US"), q("l4", 1200, "USD", "global"),
                           q("l4", 67045.7, "CNY", "CN"),                       # 10,000 USD in China
                           q("t4", 800, "USD", "US"), q("t4", 6704.57, "CNY", "CN"),
                           q("h20", 13000, "USD", "CN"), q("h20", 1400000, "CNY", "CN", condition="used")])
    c = cat.with_table("prices", prices)
    rate = _fx_rates()["CNY"]

    def new(region, currency="USD", gpu="l4"):
        return card_prices(c.with_market(Market(region)), currency)[gpu].new

    assert new("us").value == pytest.approx(1100) and new("us").market == "us"          # US and global
    assert new("eu").value == pytest.approx(1200) and new("eu").market == "eu"          # global only
    assert new("global").value == pytest.approx(1100)
    assert new("china", "CNY").value == pytest.approx(67045.7) and new("china", "CNY").market == "china"
    t4_eu = new("eu", gpu="t4")                              # US only: not the China quote
    assert t4_eu.value == pytest.approx(800) and t4_eu.market == "outside eu"
    assert new("apac", "CNY", gpu="t4").value == pytest.approx(800 * rate)
    h20 = new("global", gpu="h20")                           # China only: still priced, marked
    assert h20.value == pytest.approx(13000) and h20.market == "outside global"
    assert market_summary(c, "USD")["street_outside"] == 1
