"""Page 02 — quantization fit: will model X run (or fine-tune) on card Y, at which precision, on how many
cards, how fast, and what does each token cost?"""

from __future__ import annotations

import html
import math

import ipywidgets as w
import numpy as np

from gpucost.bands import band, fit_verdict, memory_band
from gpucost.economics import Ownership, job_costs, token_costs
from gpucost.errors import GpucostError
from gpucost.fit_matrix import catalog_key, fit_matrix
from gpucost.fmt import fmt_hours, fmt_money
from gpucost.i18n import localize
from gpucost.memory import (
    ENGINE_PROFILES,
    LOSS_KERNELS,
    MODES,
    TRAINING_FRAMEWORKS,
    Setup,
    applicable_inputs,
    card_fits,
    estimate,
    max_batch,
    max_context,
)
from gpucost.models import catalog_spec
from gpucost.pricing import card_table
from gpucost.quant import formats, get_format
from gpucost.records import gpu_records
from gpucost.serialize import number
from gpucost.specs import DEFAULTS, SHARDERS, SPECS
from gpucost.speed import decode_speed_cards, efficiency_table, training_time
from gpucost.ui.chart import TEMPLATE
from gpucost.ui.shell import Page
from gpucost.validation import TARGETS

COMPONENTS = ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead")
COLORS = {"weights": "#3b6ea8", "kv_cache": "#e49b0f", "activations": "#6aa84f", "gradients": "#a64d79",
          "optimizer": "#cc4125", "overhead": "#999999"}
BAR_COUNTS = (1, 2, 4, 8)
#: the largest config.json the page reads (real ones are a few kB; multimodal ones up to ~20 kB)
TRAIN_ENGINES = TRAINING_FRAMEWORKS
#: cell colours of the fit matrix by the number of cards needed
CELL_COLORS = ((1, "#b7e1b0"), (2, "#e8f2a1"), (4, "#fde3a7"), (8, "#f9c59a"), (10**9, "#f4a6a6"))


#: the page's LoRA dropout choice → Setup.lora_dropout: the framework's default, off, or on (any probability above 0
#: keeps the same mask; 0.05 is the common value)
DROPOUT_VALUES: dict[str, float | None] = {"": None, "off": 0.0, "on": 0.05}


class QuantFitPage(Page):
    page_id = "fit"

    def __init__(self, model: str = "llama-3.1-8b", quant: str = "q4_k_m", mode: str = "inference",
                 engine: str = "", context: int | str = DEFAULTS.context, batch: int = DEFAULTS.batch, gpus: int = DEFAULTS.gpus, zero: int = 0,
                 sharder: str = DEFAULTS.sharder, offload: str = "none", lora_rank: int = DEFAULTS.lora_rank,
                 gpu: str = "rtx-4090", train_tokens_m: float = 100.0,
                 budget: float | None = None, images: int = 0, cpu_moe: int = 0, host_bw_gbps: float | None = None,
                 loss_kernel: str = "", precision: str = "", lora_dropout: str = "", lang: str = "en",
                 currency: str | None = None, catalog=None):
        self._init = dict(model=model, quant=quant, mode=mode, engine=engine, context=context, batch=batch, gpus=gpus,
                          zero=zero, sharder=sharder, offload=offload, lora_rank=lora_rank, gpu=gpu,
                          train_tokens_m=train_tokens_m,
                          budget=budget, images=images, cpu_moe=cpu_moe, host_bw_gbps=host_bw_gbps,
                          loss_kernel=loss_kernel, precision=precision, lora_dropout=lora_dropout)
        self.est = None
        self.fits = []
        self.matrix = None
        self.speed_rows: list[dict] = []
        super().__init__(lang=lang, currency=currency, catalog=catalog)

    # -- build -----------------------------------------------------------------------------------
    def build(self) -> None:
        i = self._init
        cat = self.catalog
        style = {"description_width": "initial"}
        models = list(cat.table("models")["id"])
        self._formats = formats(cat)
        self.model = w.Dropdown(options=models, value=i["model"] if i["model"] in models else models[0], style=style)
        self.model.add_class("gc-fit-model")
        try:
            q = get_format(i["quant"], cat).id
        except GpucostError:
            q = "bf16"
        self.quant = w.Dropdown(options=list(self._formats), value=q, style=style)
        self.quant.add_class("gc-fit-quant")
        self.mode = w.ToggleButtons(options=list(MODES), value=i["mode"] if i["mode"] in MODES else "inference",
                                    style={"button_width": "72px", "description_width": "initial"})
        self.mode.add_class("gc-fit-mode")
        self.engine = w.Dropdown(options=[], style=style)
        self.engine.add_class("gc-fit-engine")
        context = self.spec_field("context", SPECS["context"], i["context"], "fit_context", "fit_context_help",
                                  css="gc-fit-context")
        batch = self.spec_field("batch", SPECS["batch"], i["batch"], "fit_batch", css="gc-fit-batch")
        gpus_field = self.spec_field("gpus", SPECS["gpus"], i["gpus"], "fit_gpus", css="gc-fit-gpus")
        self.context, self.batch, self.gpus = (self.fields[k].widget for k in ("context", "batch", "gpus"))
        self.context_msg = self.fields["context"].message
        self.zero = w.Dropdown(options=[0, 1, 2, 3], value=i["zero"] if i["zero"] in (0, 1, 2, 3) else 0, style=style)
        self.zero.add_class("gc-fit-zero")
        # what shards the states at ZeRO 1-3 (DeepSpeed or PyTorch FSDP): FSDP's torch AdamW step keeps a temporary
        self.sharder = w.Dropdown(options=[(self.opt(v), v) for v in SHARDERS],
                                  value=i["sharder"] if i["sharder"] in SHARDERS else DEFAULTS.sharder, style=style)
        self.sharder.add_class("gc-fit-sharder")
        self.offload = w.Dropdown(options=["none", "cpu", "nvme"],
                                  value=i["offload"] if i["offload"] in ("none", "cpu", "nvme") else "none", style=style)
        self.offload.add_class("gc-fit-offload")
        # training: the framework's loss, or a fused loss kernel that keeps no logits (LOSS_KERNELS)
        self._loss_values = ("", *sorted(LOSS_KERNELS))
        self.loss_kernel = w.Dropdown(options=[(self.opt(v or "loss_framework"), v) for v in self._loss_values],
                                      value=i["loss_kernel"] if i["loss_kernel"] in self._loss_values else "", style=style)
        self.loss_kernel.add_class("gc-fit-loss-kernel")
        # training: the precision (empty: the framework's) and whether LoRA dropout is on (it keeps a mask per adapted
        # input; its probability does not change the memory): the CLI's --precision and --lora-dropout
        self._precision_values = SPECS["train_precision"].choices
        self.precision = w.Dropdown(options=self._precision_options(), style=style,
                                    value=i["precision"] if i["precision"] in self._precision_values else "")
        self.precision.add_class("gc-fit-precision")
        self._dropout_values = ("", "off", "on")
        self.lora_dropout = w.Dropdown(options=self._dropout_options(), style=style,
                                       value=i["lora_dropout"] if i["lora_dropout"] in self._dropout_values else "")
        self.lora_dropout.add_class("gc-fit-lora-dropout")
        rank = self.spec_field("lora_rank", SPECS["lora_rank"], i["lora_rank"], "fit_rank", css="gc-fit-rank")
        tokens = self.spec_field("train_tokens", SPECS["train_tokens"], float(i["train_tokens_m"]) * 1e6,
                                 "fit_train_tokens", "fit_training_help", css="gc-fit-train-tokens")
        self.fields["train_tokens"].widget.value = f"{float(i['train_tokens_m']):g}M"
        self.rank, self.train_tokens = self.fields["lora_rank"].widget, self.fields["train_tokens"].widget
        budget = self.spec_field("budget", SPECS["price"], i.get("budget") or None, "fit_budget", "fit_budget_help",
                                 css="gc-fit-budget")
        # shown for the models they apply to (see _show_model_inputs): images for a vision-language model,
        # experts in host RAM for a mixture-of-experts model under llama.cpp
        images = self.spec_field("images", SPECS["images"], i["images"], "fit_images", "fit_images_help",
                                 css="gc-fit-images")
        cpu_moe = self.spec_field("cpu_moe", SPECS["cpu_moe"], i["cpu_moe"], "fit_cpu_moe", "fit_cpu_moe_help",
                                  css="gc-fit-cpu-moe")
        host_bw = self.spec_field("host_bw_gbps", SPECS["host_bw_gbps"], i["host_bw_gbps"], "fit_host_bw",
                                  "fit_host_bw_help", css="gc-fit-host-bw")
        gpus = cat.gpus
        self._gpu_options = list(zip(gpus["name"], gpus["id"], strict=True))
        try:
            gid = cat.gpu_id(i["gpu"])
        except GpucostError:
            gid = "rtx-4090" if "rtx-4090" in set(gpus["id"]) else gpus["id"].iloc[0]
        self.card = w.Dropdown(options=self._gpu_options, value=gid, style=style)
        self.card.add_class("gc-fit-card")
        self._set_engine_options(i["engine"])
        # any other model: its config.json, read in memory (never saved on the server)
        self._custom_spec = None
        self.config_upload = w.FileUpload(accept=".json", multiple=False,
                                          layout=w.Layout(width="auto", max_width="100%"))
        self.config_upload.add_class("gc-fit-config-upload")
        self.label(self.config_upload, "fit_config_button")
        self.config_msg = w.HTML()
        self.config_msg.add_class("gc-fit-config-msg")
        self.config_upload.observe(self._on_config, names="value")
        # … or its Hugging Face repo id, fetched into memory in this session
        self.hub = w.Text(placeholder="Qwen/Qwen3-8B", continuous_update=False, layout=w.Layout(width="95%"))
        self.hub.add_class("gc-fit-hub")
        self.hub.observe(self._on_hub, names="value")
        self.inputs.children = [
            self.field("fit_model", self.model),
            w.VBox([self.config_upload, self.help_line("fit_config_help"), self.config_msg]),
            self.field("fit_hub", self.hub, "fit_hub_help"),
            self.field("fit_quant", self.quant),
            self.field("fit_mode", self.mode), self.field("fit_engine", self.engine), context, batch, images,
            cpu_moe, host_bw, gpus_field,
            self.field("fit_card", self.card), self.field("fit_zero", self.zero),
            self.field("fit_sharder", self.sharder, "fit_sharder_help"),
            self.field("fit_offload", self.offload), self.field("fit_loss_kernel", self.loss_kernel, "fit_loss_kernel_help"),
            self.field("fit_precision", self.precision, "fit_precision_help"),
            self.field("fit_lora_dropout", self.lora_dropout, "fit_lora_dropout_help"),
            rank, tokens, budget, *self.shell_inputs()]

        self.summary = w.HTML()
        self.summary.add_class("gc-fit-summary")
        self.fig_box = self.chart("fig", "gc-fit-chart", height=380, barmode="stack",
                                  margin=dict(l=60, r=20, t=40, b=40), template=TEMPLATE,
                                  legend=dict(orientation="h", y=-0.15))
        self.matrix_html = w.HTML()
        self.matrix_html.add_class("gc-table")
        self.matrix_html.add_class("gc-fit-matrix")
        self.speed_html = w.HTML()
        self.speed_html.add_class("gc-table")
        self.speed_html.add_class("gc-fit-speed")
        self.quality_html = w.HTML()
        self.quality_html.add_class("gc-table")
        self.quality_html.add_class("gc-fit-quality")
        self.errors_html = w.HTML()
        self.errors_html.add_class("gc-table")
        self.errors_html.add_class("gc-fit-errors")
        self.results.children = [self.summary, self.fig_box, self.matrix_html, self.speed_html, self.quality_html,
                                 self.errors_html]
        self.mode.observe(self._mode_changed, names="value")
        for wid in (self.model, self.quant, self.engine, self.zero, self.sharder, self.offload, self.loss_kernel,
                    self.precision, self.lora_dropout, self.card):
            wid.observe(lambda _: self.safe_refresh(), names="value")

    def _precision_options(self) -> list[tuple[str, str]]:
        return [(self.t(f"fit_precision_{v or 'framework'}"), v) for v in self._precision_values]

    def _dropout_options(self) -> list[tuple[str, str]]:
        return [(self.t(f"fit_dropout_{v or 'framework'}"), v) for v in self._dropout_values]

    def _set_engine_options(self, preferred: str = "") -> None:
        training = self.mode.value != "inference"
        opts = list(TRAIN_ENGINES) if training else list(ENGINE_PROFILES)
        if preferred not in opts:
            fmt = self._formats.get(self.quant.value)
            preferred = "transformers" if training else ("llama.cpp" if fmt is not None and fmt.is_gguf else "vllm")
        self._engine_lock = True
        self.engine.options = opts
        self.engine.value = preferred
        self._engine_lock = False

    def _mode_changed(self, _change=None) -> None:
        """Switch to a format the mode can use (full/LoRA: bf16; QLoRA: NF4 with double quantization)."""
        if getattr(self, "_engine_lock", False):
            return
        fmt = self._formats[self.quant.value]
        mode = self.mode.value
        want = None
        if mode in ("full", "lora") and not fmt.is_float:
            want = "bf16"
        elif mode == "qlora" and (fmt.is_float or fmt.is_gguf or fmt.id.startswith("fp8")):
            want = "bnb-nf4-dq"
        self._engine_lock = True
        if want in self._formats:
            self.quant.value = want
        self._set_engine_options(self.engine.value)
        self._engine_lock = False
        self.safe_refresh()

    def url_widgets(self) -> dict:
        return {"model": self.model, "mode": self.mode, "quant": self.quant, "engine": self.engine,
                "gpu": self.card, "zero": self.zero, "sharder": self.sharder, "offload": self.offload,
                "loss_kernel": self.loss_kernel, "precision": self.precision, "lora_dropout": self.lora_dropout}

    def apply_params(self, params: dict) -> None:
        """Mode first (it picks a format the mode can use), then the rest."""
        order = ["model", "mode"] + [k for k in params if k not in ("model", "mode")]
        super().apply_params({k: params[k] for k in order if k in params})

    def relabel(self) -> None:
        mode = self.mode.value
        self._engine_lock = True  # new option labels are not a new input: no recomputation here
        self.mode.options = [(self.t(f"fit_mode_{m}"), m) for m in MODES]
        self.mode.value = mode
        self.options(self.offload, ("none", "cpu", "nvme"))
        self.options(self.sharder, SHARDERS)
        keep = self.loss_kernel.value
        self.loss_kernel.options = [(self.opt(v or "loss_framework"), v) for v in self._loss_values]
        self.loss_kernel.value = keep
        for wid, options in ((self.precision, self._precision_options), (self.lora_dropout, self._dropout_options)):
            keep = wid.value
            wid.options = options()
            wid.value = keep
        self._engine_lock = False

    # -- a model from its config.json ----------------------------------------------------------------
    CUSTOM = "__config__"

    def _spec(self):
        if self.model.value == self.CUSTOM and self._custom_spec is not None:
            return self._custom_spec
        return catalog_spec(self.model.value, self.catalog)

    def _on_config(self, change) -> None:
        """Read an uploaded config.json (bytes in memory), check it, and make it the model of the page."""
        from gpucost.models import parse_config_json, spec_from_hf_config

        try:
            upload = self.read_upload(change, "config.json")
            if upload is None:
                return
            name, content = upload
            spec = spec_from_hf_config(parse_config_json(content, name), name=name)
        except GpucostError as exc:
            self.config_msg.value = f'<span class="gc-msg-error">{html.escape(str(exc))}</span>'
            return
        self._use_custom(spec, name)

    def _on_hub(self, change) -> None:
        """A Hugging Face repo id typed in: its config.json read into memory (never saved on the server), or
        the reason it cannot be, next to the input."""
        from gpucost.models import read_hf_config, spec_from_hf_config

        repo = str(change["new"] or "").strip()
        if not repo:
            return
        try:
            with self.compute_budget():
                spec = spec_from_hf_config(read_hf_config(repo), name=repo)
        except GpucostError as exc:
            self.config_msg.value = f'<span class="gc-msg-error">{html.escape(str(exc))}</span>'
            return
        self._use_custom(spec, repo)

    def _use_custom(self, spec, name: str) -> None:
        """Make a model read from a config.json (uploaded or fetched) the page's model."""
        self._custom_spec = spec
        label = self.t("fit_config_option", name=spec.hf_repo or name)
        models = [o for o in self.model.options if (o[1] if isinstance(o, tuple) else o) != self.CUSTOM]
        models = [o if isinstance(o, tuple) else (o, o) for o in models]
        self.config_msg.value = (f'<span class="gc-msg-ok">'
                                 f'{html.escape(self.t("fit_config_ok", name=name, params=f"{spec.params_total / 1e9:,.2f}"))}'
                                 '</span>')
        with self.refresh_once():
            self.model.options = [(label, self.CUSTOM), *models]
            self.model.value = self.CUSTOM
            self.safe_refresh()

    # -- compute -----------------------------------------------------------------------------------
    def _table(self):
        return card_table(self.catalog, self.state.currency)

    def _matrix_key(self):
        if getattr(self, "_mkey", None) is None or self._mkey[0] is not self.catalog:
            self._mkey = (self.catalog, catalog_key(self.catalog))
        return self._mkey[1]

    def _model_inputs(self, spec) -> tuple[bool, bool]:
        return applicable_inputs(spec, self.mode.value, self.engine.value)

    def _show_model_inputs(self, spec) -> None:
        imgs, moe = self._model_inputs(spec)
        for name, shown in (("images", imgs), ("cpu_moe", moe), ("host_bw_gbps", moe)):
            self.fields[name].box.layout.display = "" if shown else "none"

    def setup(self, spec=None) -> Setup:
        training = self.mode.value != "inference"
        imgs, moe = self._model_inputs(spec if spec is not None else self._spec())
        return Setup(mode=self.mode.value, context=self.val("context"), batch=self.val("batch"),
                     gpus=self.val("gpus"), engine=self.engine.value,
                     zero=int(self.zero.value) if training else 0, sharder=self.sharder.value,
                     offload=self.offload.value if training else "none", lora_rank=self.val("lora_rank"),
                     images=self.val("images") if imgs else 0, cpu_moe=self.val("cpu_moe") if moe else 0,
                     loss_kernel=(self.loss_kernel.value or None) if training else None,
                     precision=(self.precision.value or None) if training else None,
                     lora_dropout=DROPOUT_VALUES[self.lora_dropout.value] if training else None)

    def refresh(self) -> None:
        if getattr(self, "_engine_lock", False):
            return
        cat = self.catalog
        spec = self._spec()
        fmt = self._formats[self.quant.value]
        self._show_model_inputs(spec)
        s = self.setup(spec)
        self.est = estimate(spec, fmt, s)
        s = self.est.setup
        self.fits = card_fits(spec, fmt, s, cat.gpus)
        # the page shows the chosen model's row of the matrix: every format × every card for it alone
        self.matrix = fit_matrix(cat, s, key=((spec,), self._matrix_key()[1]))
        card = next(f for f in self.fits if f.gpu == self.card.value)
        vram = card.vram_gib
        self.max_ctx = max_context(spec, fmt, s, vram) if spec.is_llm else None
        self.max_b = max_batch(spec, fmt, s, vram, upper=1024)
        self._speed(spec, fmt, s)
        self._draw(spec, fmt, s, card)

    def _speed(self, spec, fmt, s: Setup) -> None:
        """Speed and cost on every card that holds the setup (costs: gpucost.economics, the same owned-hour
        and rented-hour figures as the CLI and the other pages)."""
        self.speed_rows = []
        if not spec.is_llm:
            return
        recs = gpu_records(self.catalog)
        cards = [recs[f.gpu] for f in self.fits]
        counts = np.array([f.min_gpus if f.min_gpus else np.nan for f in self.fits], dtype=float)
        cur, own = self.state.currency, Ownership()
        # whether each card holds the setup beyond the error band's high end or only inside it (the CLI's verdict)
        verdict = {f.gpu: fit_verdict(f, self.est, self.catalog)["verdict"] for f in self.fits}
        rows = []
        if s.mode == "inference":
            tps = decode_speed_cards(spec, fmt, cards, counts, batch=s.batch, context=s.context, engine=s.engine,
                                     catalog=self.catalog, cpu_moe=s.cpu_moe,
                                     host_bw_gbps=self.val("host_bw_gbps") if s.cpu_moe else None)
            b = band("decode_speed", s.engine, self.catalog)
            lo, hi = (b.low, b.high) if b else (math.nan, math.nan)
            for f, n, t in zip(self.fits, counts, tps, strict=True):
                if np.isfinite(t):
                    rows.append({"gpu": f.gpu, "name": f.name, "gpus": int(n), "verdict": verdict[f.gpu],
                                 "tokens_per_s": float(t),
                                 "tokens_per_s_low": float(t) * lo, "tokens_per_s_high": float(t) * hi,
                                 **token_costs(self.catalog, f.gpu, float(t), int(n), cur, own)})
        else:
            tokens = float(self.val("train_tokens"))
            for f, g in zip(self.fits, cards, strict=True):
                if not f.min_gpus:
                    continue
                try:
                    te = training_time(spec, g, mode=s.mode, tokens=tokens, gpus=f.min_gpus, seq=s.context,
                                       micro_batch=s.batch, zero=s.zero, catalog=self.catalog)
                except GpucostError:
                    continue
                rows.append({"gpu": f.gpu, "name": f.name, "gpus": f.min_gpus, "verdict": verdict[f.gpu],
                             "tokens_per_s": te.tokens_per_s,
                             "hours": te.hours, **job_costs(self.catalog, f.gpu, te.hours, f.min_gpus, cur, own)})
        rows.sort(key=lambda x: (x["cloud"] is None, x["cloud"] or 0.0))
        self.speed_rows = rows

    # -- draw --------------------------------------------------------------------------------------
    def _draw(self, spec, fmt, s: Setup, card) -> None:
        e = self.est
        t = self.t
        tight = (card.min_gpus and card.need_gib is not None and card.per_gpu_gib is not None
                 and card.per_gpu_gib > card.usable_gib)  # the need fits, not the allocator's whole cache
        fits_txt = (t("fit_fits_tight", card=card.name, n=card.min_gpus, need=f"{card.need_gib:.1f}",
                      total=f"{card.per_gpu_gib:.1f}") if tight else
                    t("fit_fits_one", card=card.name) if card.min_gpus == 1 else
                    t("fit_fits_n", card=card.name, n=card.min_gpus) if card.min_gpus else
                    t("fit_fits_none", card=card.name))
        answer = t("fit_answer", model=spec.id, quant=fmt.name, total=f"{e.per_gpu.total:.1f}", fits=fits_txt)
        answer += " " + self._speed_answer(card, s) + self._budget_answer(s)
        lines = [t("fit_summary", total=f"{e.per_gpu.total:.1f}", gpus=s.gpus, cpu=f"{e.cpu_gib:.1f}",
                   file=f"{e.weights_file_gib:.2f}")]
        if self.max_ctx is not None or self.max_b is not None:
            lines.append(t("fit_max", card=card.name, ctx=self.max_ctx if self.max_ctx is not None else "—",
                           batch=self.max_b if self.max_b is not None else "—"))
        if e.trainable_params:
            lines.append(t("fit_trainable", n=f"{e.trainable_params / 1e6:,.1f}"))
        mband = memory_band(e, self.catalog)
        if mband:
            b = mband["per_gpu_gib"]
            lines.append(t("fit_band_memory", low=f"{b['low']:.1f}", high=f"{b['high']:.1f}", rows=b["rows"],
                           sources=b["sources"]))
        if card.occupied_gib is not None and card.per_gpu_gib is not None and card.occupied_gib > card.per_gpu_gib + 0.05:
            lines.append(t("fit_occupied", occ=f"{card.occupied_gib:.1f}", card=card.name, engine=s.engine,
                           need=f"{card.per_gpu_gib:.1f}"))
        self.verdict = fit_verdict(card, e, self.catalog)
        if self.verdict["message"]:
            lines.append(html.escape(localize(self.verdict["message"], self.state.lang)))
        if "compute capability" in card.reason:
            lines.append(html.escape(card.reason))
        lines += [html.escape(localize(n, self.state.lang)) for n in e.notes]
        self.summary.value = self.gloss(f"<p class='gc-answer'><b>{html.escape(answer)}</b></p>"
                                        "<p class='gc-help'>" + "<br>".join(lines) + "</p>")
        # stacked bar per GPU count against the card's usable memory
        bars = {}
        for n in BAR_COUNTS:
            try:
                bars[n] = estimate(spec, fmt, s, gpus=n).per_gpu
            except GpucostError:
                continue
        xs = [t("fit_bar_x", n=n) for n in bars]
        with self.redraw("fig") as fig_:
            fig_.data = []
            for comp in COMPONENTS:
                fig_.add_bar(x=xs, y=[getattr(b, comp) for b in bars.values()], name=t(f"fit_comp_{comp}"),
                                 marker_color=COLORS[comp])
            fig_.add_scatter(x=xs, y=[card.usable_gib] * len(xs), mode="lines", name=t("fit_usable", card=card.name),
                                 line=dict(color="#d62728", dash="dash"))
            fig_.layout.title = t("fit_chart_title", model=spec.id, quant=fmt.id)
            fig_.layout.yaxis.title = t("fit_axis_gib")
        self._draw_matrix(spec)
        self._draw_speed(s)
        self._draw_quality()
        self._draw_errors()

    def _speed_answer(self, card, s: Setup) -> str:
        """How fast and at what cost the chosen card runs it (with the fewest cards that hold it)."""
        row = next((r for r in self.speed_rows if r["gpu"] == card.gpu), None)
        if row is None:
            return ""
        cur = self.state.currency
        cloud = fmt_money(row["cloud"], cur) if row["cloud"] is not None else self.t("fit_no_cloud")
        own = fmt_money(row["new"], cur) if row["new"] is not None else "—"
        if s.mode == "inference":
            return self.t("fit_answer_speed", n=row["gpus"], card=card.name, tps=f"{row['tokens_per_s']:,.0f}",
                          batch=s.batch, cloud=cloud, own=own)
        return self.t("fit_answer_train", n=row["gpus"], card=card.name, hours=fmt_hours(row["hours"]),
                      tokens=f"{self.val('train_tokens'):,.0f}", cloud=cloud, own=own)

    def _budget_answer(self, s: Setup) -> str:
        """With a budget per card: the fastest card bought new within it that holds the setup on its own."""
        budget = self.val("budget")
        if budget is None:
            return ""
        prices = card_table(self.catalog, self.state.currency).set_index("id")["price_new"]
        fits = [r for r in self.speed_rows if r["gpus"] == 1 and r["gpu"] in prices.index
                and prices[r["gpu"]] == prices[r["gpu"]] and prices[r["gpu"]] <= budget]
        cur = self.state.currency
        if not fits:
            return " " + self.t("fit_budget_none", budget=fmt_money(budget, cur))
        if s.mode == "inference":
            best = max(fits, key=lambda r: r["tokens_per_s"])
            how = self.t("fit_budget_tps", tps=f"{best['tokens_per_s']:,.0f}")
        else:
            best = min(fits, key=lambda r: r["hours"])
            how = self.t("fit_budget_hours", hours=fmt_hours(best["hours"]))
        self.budget_pick = best["gpu"]
        return " " + self.t("fit_budget_best", budget=fmt_money(budget, cur), card=best["name"],
                            price=fmt_money(float(prices[best["gpu"]]), cur), how=how)

    def _draw_matrix(self, spec) -> None:
        df = self.matrix.for_model(spec.id)
        valid = self.matrix.min_gpus[self.matrix.models.index(spec.id)]  # formats × cards
        names = dict(self._gpu_options)
        names = {v: k for k, v in names.items()}
        head = "".join(f"<th>{html.escape(f)}</th>" for f in df.columns)
        rows = []
        for ci, gid in enumerate(df.index):
            cells = []
            for fi in range(len(df.columns)):
                n = int(valid[fi, ci])
                if n < 0:
                    cells.append("<td style='background:#eee;color:#999'>·</td>")
                elif n == 0:
                    cells.append(f"<td style='background:#f4a6a6' title='{html.escape(self.t('fit_none'))}'>✗</td>")
                else:
                    color = next(c for lim, c in CELL_COLORS if n <= lim)
                    cells.append(f"<td style='background:{color}' data-n='{n}'>{n}</td>")
            rows.append(f"<tr data-id='{gid}'><td class='gc-l'>{html.escape(names.get(gid, gid))}</td>{''.join(cells)}</tr>")
        self.matrix_html.value = (f"<details><summary>{html.escape(self.t('fit_matrix_title', model=spec.id))}</summary>"
                                  f"<p class='gc-help'>{html.escape(self.t('fit_matrix_help'))}</p>"
                                  f"<div class='gc-wide'><table><thead><tr><th>{html.escape(self.t('fit_col_card'))}</th>"
                                  f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></details>")

    def _card_cell(self, r: dict) -> str:
        """The card's name; marked where it holds the setup only inside the error band."""
        mark = (f" <span class='gc-warn'>({html.escape(self.t('fit_mark_within_band'))})</span>"
                if r["verdict"] == "within_band" else "")
        return f"<td class='gc-l'>{html.escape(r['name'])}{mark}</td>"

    def _draw_speed(self, s: Setup) -> None:
        cur = self.state.currency
        t = self.t
        if s.mode == "inference":
            heads = [t("fit_col_card"), t("fit_col_gpus"), t("fit_col_tps", batch=s.batch), t("fit_col_tps_band"),
                     t("fit_col_cost_cloud", cur=cur), t("fit_col_cost_new", cur=cur), t("fit_col_cost_used", cur=cur)]
            body = "".join(
                f"<tr data-id='{r['gpu']}'>{self._card_cell(r)}<td>{r['gpus']}</td>"
                f"<td>{r['tokens_per_s']:,.1f}</td><td>{_fmt(r['tokens_per_s_low'], 0)}–{_fmt(r['tokens_per_s_high'], 0)}</td>"
                f"<td>{_fmt(r['cloud'], 3)}</td><td>{_fmt(r['new'], 3)}</td>"
                f"<td>{_fmt(r['used'], 3)}</td></tr>" for r in self.speed_rows)
            help_ = t("fit_speed_help", years=f"{Ownership().years:g}", util=f"{Ownership().utilization * 100:.0f}")
        else:
            heads = [t("fit_col_card"), t("fit_col_gpus"), t("fit_col_train_tps"), t("fit_col_hours"),
                     t("fit_col_run_cost", cur=cur), t("fit_col_run_cost_new", cur=cur),
                     t("fit_col_run_cost_used", cur=cur)]
            body = "".join(
                f"<tr data-id='{r['gpu']}'>{self._card_cell(r)}<td>{r['gpus']}</td>"
                f"<td>{r['tokens_per_s']:,.0f}</td><td>{r['hours']:,.1f}</td><td>{_fmt(r['cloud'], 2)}</td>"
                f"<td>{_fmt(r['new'], 2)}</td><td>{_fmt(r['used'], 2)}</td></tr>"
                for r in self.speed_rows)
            help_ = t("fit_train_help", tokens=f"{self.val('train_tokens') / 1e6:,.0f}", years=f"{Ownership().years:g}",
                      util=f"{Ownership().utilization * 100:.0f}")
        self.speed_html.value = (f"<details><summary>{html.escape(t('fit_speed_title'))}</summary>"
                                 f"<p class='gc-help'>{html.escape(help_)}</p>"
                                 "<div class='gc-wide'><table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads)
                                 + f"</tr></thead><tbody>{body}</tbody></table></div></details>")

    def _draw_quality(self) -> None:
        rows = []
        for f in self._formats.values():
            delta = "—" if f.ppl_delta is None else f"+{f.ppl_delta:g}"
            note = f.ppl_delta_model or self.t("fit_no_ppl")
            rows.append(f"<tr><td class='gc-l'>{html.escape(f.name)}</td><td>{f.bits_per_weight:g}</td><td>{delta}</td>"
                        f"<td class='gc-l gc-help'>{html.escape(note)}</td>"
                        f"<td class='gc-l gc-help'>{html.escape(f.ppl_delta_source or f.source)}</td></tr>")
        heads = [self.t(k) for k in ("fit_col_format", "fit_col_bits", "fit_col_ppl", "fit_col_ppl_model", "fit_col_source")]
        self.quality_html.value = (f"<details><summary>{html.escape(self.t('fit_quality_title'))}</summary><table><thead><tr>"
                                   + "".join(f"<th>{html.escape(h)}</th>" for h in heads)
                                   + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></details>")

    def _draw_errors(self) -> None:
        """The cross-validated error per category and engine (data/error_bands.csv: each source document's
        rows estimated with factors refitted without it)."""
        summ = self.catalog.table("error_bands")
        heads = [self.t(k) for k in ("fit_err_category", "fit_err_engine", "fit_err_rows", "fit_err_median",
                                     "fit_err_p90", "fit_err_band", "fit_err_target")]
        body = []
        for r in summ.to_dict(orient="records"):
            target = TARGETS.get(r["category"])
            eng = self.t("fit_err_all_engines") if r["engine"] == "*" else r["engine"]
            body.append(f"<tr><td class='gc-l'>{html.escape(self.t('fit_errcat_' + r['category']))}</td>"
                        f"<td class='gc-l'>{html.escape(eng)}</td><td>{r['rows']} / {r['sources']}</td>"
                        f"<td>{_pct(number(r['median_abs_error_pct']))}</td><td>{_pct(number(r['p90_abs_error_pct']))}</td>"
                        f"<td>{r['low']:.2f}–{r['high']:.2f}</td>"
                        f"<td>{'—' if target is None else f'≤ {target:g} %'}</td></tr>")
        self.error_rows = summ[["category", "engine", "rows", "sources", "median_abs_error_pct",
                                "p90_abs_error_pct", "p10", "p90", "low", "high"]].to_dict(orient="records")
        fheads = [self.t(k) for k in ("fit_col_engine", "fit_col_bw_eff", "fit_col_layer_ms", "fit_col_host_ms",
                                      "fit_col_compute_eff", "fit_col_calibrated_on", "fit_col_source")]
        frows = []
        for e in efficiency_table(self.catalog).values():
            if e.engine == "training":
                continue
            frows.append(f"<tr><td class='gc-l'>{html.escape(e.engine)}</td><td>{e.bw_efficiency:.3f}</td>"
                         f"<td>{e.layer_overhead_ms:.3f}</td><td>{e.host_layer_ms:.3f}</td>"
                         f"<td>{e.compute_efficiency:.3f}</td>"
                         f"<td class='gc-l'>{html.escape(', '.join(e.calibration_rows) or e.borrowed_from or '—')}</td>"
                         f"<td class='gc-l gc-help'>{html.escape(e.source)}</td></tr>")
        self.errors_html.value = (f"<details><summary>{html.escape(self.t('fit_errors_title'))}</summary>"
                                  f"<p class='gc-help'>{html.escape(self.t('fit_errors_help'))}</p>"
                                  "<div class='gc-wide'><table><thead><tr>"
                                  + "".join(f"<th>{html.escape(h)}</th>" for h in heads)
                                  + f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
                                  + f"<details><summary>{html.escape(self.t('fit_factors_title'))}</summary><table><thead><tr>"
                                  + "".join(f"<th>{html.escape(h)}</th>" for h in fheads)
                                  + f"</tr></thead><tbody>{''.join(frows)}</tbody></table></details></details>")

    def results_record(self) -> dict:
        rec = super().results_record()
        if self.est is None:
            return rec
        card = next((f for f in self.fits if f.gpu == self.card.value), None)
        rec.update({
            "model": self.est.model, "quant": self.est.quant, "mode": self.est.setup.mode,
            "engine": self.est.setup.engine, "context": self.est.setup.context, "batch": self.est.setup.batch,
            "gpus": self.est.setup.gpus, "images": self.est.setup.images, "cpu_moe": self.est.setup.cpu_moe,
            "loss_kernel": self.est.setup.loss_kernel, "terms_gib": dict(self.est.terms),
            "precision": self.est.setup.precision, "lora_dropout": self.est.setup.lora_dropout,
            "allocated_peak_gib": self.est.allocated_gib if self.est.terms else None,
            "per_gpu_gib": self.est.per_gpu.to_dict(), "cpu_gib": self.est.cpu_gib,
            "weights_file_gib": self.est.weights_file_gib, "card": self.card.value,
            "card_min_gpus": card.min_gpus if card else None, "band": memory_band(self.est, self.catalog),
            "verdict": {k: str(v) if k == "message" else v for k, v in getattr(self, "verdict", {}).items()}, "max_context": self.max_ctx, "max_batch": self.max_b,
            "matrix": {gid: {f: (None if math.isnan(v) else int(v)) for f, v in row.items()}
                       for gid, row in self.matrix.for_model(self.est.model).iterrows()},
            "speed": self.speed_rows[:60], "bars": len(self.fig.data),
            "quality_rows": len(self._formats), "errors": getattr(self, "error_rows", []),
            "summary": self.summary.value, "budget_pick": getattr(self, "budget_pick", None),
        })
        return rec




def _fmt(v, nd=2) -> str:
    return "—" if v is None else f"{v:,.{nd}f}"


def _pct(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.1f} %"
