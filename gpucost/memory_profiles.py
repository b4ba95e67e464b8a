"""What inference engines and training frameworks do with memory: the sourced constants and profiles
the memory model (:mod:`gpucost.memory`) computes with. Each constant names its source."""

from __future__ import annotations

from dataclasses import dataclass

from gpucost.specs import ENGINES as SPEC_ENGINES

MODES = ("inference", "full", "lora", "qlora")
ENGINES = SPEC_ENGINES  # the one list (gpucost.specs); ENGINE_PROFILES below covers exactly these

OFFLOADS = ("none", "cpu", "nvme")
#: GPU counts tried for "how many cards" to serve a model (tensor parallel needs the heads to divide
#: evenly); training counts are exact: the fewest data-parallel ranks up to DEFAULTS.max_gpus (bisection)
INFERENCE_GPU_COUNTS = (1, 2, 3, 4, 6, 8, 16)

#: CUDA context of one process [GiB]: 128–256 MiB per GPU with CUDA's lazy module loading, the Linux
#: default since CUDA 12.2 (InvokeAI PR #9447, https://github.com/invoke-ai/InvokeAI/pull/9447, measured
#: with nvidia-smi; NVIDIA developer forum "Lazy Loading", https://forums.developer.nvidia.com/t/lazy-loading/261135).
#: The upper end is used. Older stacks loading every kernel eagerly showed 781 MB for PyTorch alone
#: (https://github.com/pytorch/pytorch/issues/34323).
CUDA_CONTEXT_GIB = 0.25


#: transformers before v4.36.0 (2023-12-11; the Cache classes, "DynamicCache (type of past_key_value introduced
#: in transformers v4.36.0)", https://github.com/intel/ipex-llm/pull/9674; vLLM moved to it on 2023-12-12,
#: https://github.com/vllm-project/vllm/pull/2046) kept the KV cache as a tuple of per-layer tensors that every
#: decode step rebuilds with torch.cat (modeling_llama.py 4.35: key_states = torch.cat([past_key_value[0],
#: key_states], dim=2)); generate() still holds the previous step's tuple in model_kwargs["past_key_values"]
#: while the forward builds the next one, so the step's peak holds two whole caches. DynamicCache replaces
#: each layer's tensor as it goes (one layer's copy at a time). Remote-code models that still keep tuples
#: (Qwen-1, ChatGLM2/3, Baichuan) behave the old way on any version; gpucost does not know which those are.
TRANSFORMERS_TUPLE_CACHE_BEFORE = "2023-12-11"


def holds_two_kv_caches(engine: str, as_of: str | None) -> bool:
    """Whether a decode step of ``engine`` at the date ``as_of`` (None: today) holds two KV caches at its
    peak (:data:`TRANSFORMERS_TUPLE_CACHE_BEFORE`)."""
    return engine == "transformers" and as_of is not None and str(as_of) < TRANSFORMERS_TUPLE_CACHE_BEFORE


@dataclass(frozen=True)
class EngineProfile:
    """How an inference engine lays out memory. Every field has its source in :data:`ENGINE_PROFILES`."""

    name: str
    parallel: str                    # default multi-GPU split: "tensor" or "layer"
    embed_on_gpu: bool               # token-embedding table in GPU memory
    kv_sliding_window: bool          # sliding-window layers cache only the window
    kv_mla_compressed: bool          # MLA cached as the compressed latent
    activation_model: str            # "hf" | "llamacpp" | "vllm" | "trtllm"
    prefill_chunk: int | None        # tokens per forward pass (None: the whole prompt)
    preallocate: str | None          # "total" (vLLM: fraction of the card) | "free" (TRT-LLM) | None
    preallocate_fraction: float | None
    kv_dtypes: tuple[str, ...]
    source: str
    fp16_accumulate: bool = False    # FP16 matrix math accumulates in FP16 (cuBLAS CUBLAS_COMPUTE_16F)
    #: on a card whose FP16 runs slower than its FP32 (Pascal GP102/GP104, compute capability 6.1: the P40) the engine
    #: computes no FP16: quantized weights' products on int8 (dp4a) and the rest in FP32
    no_slow_fp16: bool = False
    #: passes a decode step makes over the KV cache: 1 where it is written in place and read by attention; 3 where
    #: each step copies the whole cache into a new tensor one token longer (read + write) before attention reads it
    kv_passes: float = 1.0


#: Engine memory profiles. Sources:
#: transformers — HF generate() runs the prompt in one forward pass and keeps the full KV cache of every
#:   layer (DynamicCache; no sliding-window saving) and computes logits of the last position only
#:   (transformers >= 4.45 logits_to_keep); DeepSeek's HF modeling caches full per-head K/V.
#: vLLM — pre-allocates gpu_memory_utilization (default 0.9) of the card for weights, activations and
#:   a paged KV pool (docs/configuration/optimization.md: "vLLM pre-allocates GPU cache using this
#:   percentage of memory"); chunked prefill of max_num_batched_tokens = 2048 tokens per step (V1 default
#:   for the OpenAI server on cards other than >=70 GiB non-A100, vllm/engine/arg_utils.py
#:   get_batch_defaults); the profiling run adds the sampler's fp32 logits; kv_cache_dtype auto|fp8;
#:   hybrid KV manager caches only the window of sliding-window layers; MLA latent cache.
#: llama.cpp — token embeddings on the CPU (src/llama-model.cpp); compute buffer sized for n_ubatch = 512
#:   tokens (common/common.h default) over the whole n_ctx; --cache-type-k/-v f16|q8_0|q4_0
#:   (tools/server/README.md); SWA cache for sliding-window models; default split: layers (-sm layer).
#: TensorRT-LLM — KvCacheConfig.free_gpu_memory_fraction = 0.9 of the memory left after weights and
#:   activations (https://nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html); activations
#:   pre-computed at build time for the largest shapes (reference/memory.html); tensor parallel.
ENGINE_PROFILES: dict[str, EngineProfile] = {
    "transformers": EngineProfile(
        "transformers", "layer", True, False, False, "hf", None, None, None, ("fp16", "bf16", "fp32"),
        "transformers generate(): whole prompt in one pass, DynamicCache, logits_to_keep=1",
        # every decode step appends by copying: transformers/cache_utils.py DynamicLayer.update, self.keys =
        # torch.cat([self.keys, key_states], dim=-2) (and the tuple cache before 4.36: modeling_llama.py
        # key_states = torch.cat([past_key_value[0], key_states], dim=2)); StaticCache, not the default, writes in place
        kv_passes=3.0),
    "vllm": EngineProfile(
        "vllm", "tensor", True, True, True, "vllm", 2048, "total", 0.9, ("fp16", "bf16", "fp8"),
        "https://github.com/vllm-project/vllm/blob/main/docs/configuration/optimization.md; "
        "vllm/engine/arg_utils.py get_batch_defaults"),
    "llama.cpp": EngineProfile(
        "llama.cpp", "layer", False, True, True, "llamacpp", 512, None, None, ("fp16", "fp32", "q8_0", "q4_0"),
        "https://github.com/ggml-org/llama.cpp/blob/master/src/llama-model.cpp; tools/server/README.md; "
        "ggml/src/ggml-cuda/ggml-cuda.cu (cublasGemmEx with CUBLAS_COMPUTE_16F for FP16 matrices); "
        "ggml/src/ggml-cuda/common.cuh (fast_fp16_hardware_available: NVIDIA from Pascal except compute capability "
        "6.1, whose quantized matmuls take MMQ's dp4a int8 path and its other matmuls FP32 cuBLAS)",
        fp16_accumulate=True, no_slow_fp16=True),
    "tensorrt-llm": EngineProfile(
        "tensorrt-llm", "tensor", True, True, True, "trtllm", None, "free", 0.9, ("fp16", "bf16", "fp8"),
        "https://nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html; "
        "https://nvidia.github.io/TensorRT-LLM/reference/memory.html"),
    # SGLang: like vLLM it takes a fixed share of the card for weights and its KV pool —
    # mem_fraction_static 0.88 on one GPU, 0.87 / 0.85 / 0.81 / 0.79 at TP 2 / 4 / 8 / 16
    # (python/sglang/srt/server_args.py, v0.4) — and prefills in chunks of 8192 tokens (2048 on cards
    # under 25 GB); RadixAttention keeps the MLA latent; tensor parallel.
    "sglang": EngineProfile(
        "sglang", "tensor", True, True, True, "vllm", 8192, "total", 0.88, ("fp16", "bf16", "fp8"),
        "https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/server_args.py (mem_fraction_static, "
        "chunked_prefill_size)"),
    # ExLlamaV2: allocates the KV cache for max_seq_len × batch up front (fp16, or Q8/Q4 cache), splits
    # layers over the GPUs (gpu_split), prefills in chunks of max_input_len = 2048 tokens
    # (exllamav2/config.py), keeps the embedding table in system RAM (exllamav2/embedding.py: the weight
    # is never moved to a GPU device)
    "exllamav2": EngineProfile(
        "exllamav2", "layer", False, False, False, "vllm", 2048, None, None, ("fp16", "q8_0", "q4_0"),
        "https://github.com/turboderp/exllamav2/blob/master/exllamav2/config.py; exllamav2/embedding.py"),
}
#: SGLang's mem_fraction_static by tensor-parallel size (server_args.py, v0.4): (the least TP, fraction)
SGLANG_FRACTION_BY_TP = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))

#: Transient activation widths of one forward pass, per token, in values (times the 2 bytes of a 16-bit
#: activation). Derived from the forward code, not fitted: HF's gated MLP computes
#: down(act(gate(x)) * up(x)); at its peak act(gate), up and their product are alive = 3 × intermediate
#: (2 × intermediate for an ungated MLP: fc1 output and its activation); the residual stream, the norm
#: output, the attention output and the MLP output add 4 × hidden.
HF_MLP_LIVE = {"gated": 3, "ungated": 2}
HF_HIDDEN_LIVE = 4
#: llama.cpp's compute graph (f32 intermediates, 4 bytes): the larger of the attention scores
#: (n_ubatch × n_ctx × heads, without flash attention), the feed-forward (gate and up outputs:
#: 2 × n_ubatch × intermediate) and the logits (n_ubatch × vocab), plus 3 hidden-size buffers; ggml-alloc
#: reuses the rest. Checked against llama.cpp's printed compute buffers in benchmarks.csv im18/im19.
LLAMACPP_MLP_LIVE = {"gated": 2, "ungated": 1}
LLAMACPP_HIDDEN_LIVE = 3
F32_BYTES = 4.0
ACT_BYTES = 2.0

# -- training -------------------------------------------------------------------------------------
#: Optimizer states [bytes per trainable parameter] at full-width state (fp32) and whether they are
#: paged (bitsandbytes paged optimizers live in CUDA unified memory and are evicted to CPU RAM under
#: memory pressure; QLoRA paper arXiv 2305.14314 section 3). Adam keeps momentum and variance (2 states);
#: bitsandbytes 8-bit Adam stores each as 1 byte plus one fp32 absmax per block of 2048 values (Dettmers
#: et al. 2021, arXiv 2110.02861); SGD keeps momentum (1 state).
@dataclass(frozen=True)
class Optimizer:
    states: int                 # states per trainable parameter
    state_bytes: float | None   # bytes per state (None: the precision's full-width state)
    paged: bool
    #: state-sized temporaries the step allocates for every parameter at once: torch's AdamW runs its foreach
    #: implementation by default on CUDA, whose step computes exp_avg_sq.sqrt() for all parameters of a group into
    #: new tensors (torch/optim/adam.py _multi_tensor_adam: torch._foreach_sqrt(device_exp_avg_sqs)) before the
    #: in-place update; bitsandbytes' 8-bit and paged optimizers update in a fused kernel, SGD in place
    step_temps: int = 0


OPTIMIZERS = {
    "adamw": Optimizer(2, None, False, step_temps=1),
    "adamw-8bit": Optimizer(2, 1 + 4 / 2048, False),
    "paged-adamw": Optimizer(2, None, True),
    "paged-adamw-8bit": Optimizer(2, 1 + 4 / 2048, True),
    "sgd": Optimizer(1, None, False),
}
#: Training precision schemes [bytes per trainable parameter]: "mixed" = the ZeRO paper's mixed-precision
#: Adam (16-bit weights and gradients, fp32 master copy and fp32 states); "bf16" = pure bf16 training
#: (weights, gradients and optimizer states in bf16, no master copy — torchtune's default, dtype: bf16);
#: "fp32" = everything fp32.
PRECISIONS = {
    "mixed": {"weight": 2, "grad": 2, "master": 4, "state": 4},
    "bf16": {"weight": 2, "grad": 2, "master": 0, "state": 2},
    "fp32": {"weight": 4, "grad": 4, "master": 0, "state": 4},
}
#: Training frameworks: what each one's run keeps on the card besides the ZeRO terms, one row per framework and
#: version in data/training_profiles.csv (sourced there, field by field: :class:`TrainingProfile`). The frameworks
#: built on the HF Trainer without a memory behaviour of their own read here (axolotl, LLaMA-Factory, ms-swift,
#: DeepSpeed) carry transformers' figures and say so in their notes.
TRAINING_FRAMEWORKS = ("transformers", "trl", "unsloth", "torchtune", "litgpt", "axolotl", "llama-factory",
                       "ms-swift", "deepspeed")

#: the frameworks whose multi-GPU recipes shard with PyTorch FSDP only, never DeepSpeed (torchtune's distributed
#: recipes, LitGPT's Fabric FSDPStrategy): their ZeRO stage is FSDP's sharding
FSDP_ONLY_FRAMEWORKS = ("torchtune", "litgpt")


@dataclass(frozen=True)
class TrainingProfile:
    """One row of data/training_profiles.csv: how a training framework lays out a run's memory."""

    framework: str
    precision: str              # a key of PRECISIONS
    #: bytes per value of the parameters a quantized base keeps unquantized (embeddings, output head, norms) once
    #: the framework has prepared it (PEFT's prepare_model_for_kbit_training casts them to fp32: 4); the
    #: residual stream, and so the checkpointed layer inputs, take the same width
    kbit_param_bytes: float
    logit_bytes: float          # bytes per token per vocabulary entry at the loss's peak
    norm_saves_fp32: bool       # RMSNorm upcasts its input and keeps the fp32 copy for backward
    gqa_expand: bool            # K and V are repeated to every query head before attention (kept so)
    quant_saves_inputs: bool    # a quantized Linear's autograd function keeps its input (bitsandbytes MatMul4Bit)
    lora_dropout: bool          # the default LoRA dropout > 0: each adapted Linear keeps its dropout output + mask
    optimizer_in_backward: bool
    offload_checkpoints: bool = False  # checkpointed layer inputs go to CPU RAM
    #: which adapted Linears keep a 16-bit copy of their input of their own rather than sharing the frozen Linear's:
    #: PEFT's LoRA computes in the adapter's dtype (``x.to(lora_A.weight.dtype)``) and fp32 adapters under the
    #: trainer's bf16 autocast are recast to bf16 for each adapter — "always" where adapters are fp32 on any base
    #: (PEFT >= 0.11 autocast_adapter_dtype), "quantized" where only a quantized base's adapters are (before 0.11
    #: they took a float base's dtype), "none" where the adapters read the shared input
    adapter_copy: str = "none"
    #: bytes per value of a QLoRA run's MLP intermediates (gate, up, activation): 4 where the preparation leaves the
    #: norms' weights fp32, so the norm outputs feeding gate/up are fp32 and bitsandbytes' Linear4bit returns its
    #: input's dtype
    kbit_act_bytes: float = 2.0
    version: str = ""
    source: str = ""


#: LoRA target module sets → tensor kinds (PEFT names: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
#: down_proj; "all-linear" = every Linear in the decoder blocks except the output head)
LORA_TARGETS: dict[str, str | tuple[str, ...]] = {
    "all-linear": "all",
    "attention": ("attn_q", "attn_k", "attn_v", "attn_output", "attn_q_a", "attn_q_b", "attn_kv_a_mqa",
                  "attn_kv_b"),
    "qkv": ("attn_q", "attn_k", "attn_v", "attn_q_a", "attn_q_b", "attn_kv_a_mqa", "attn_kv_b"),
    "qv": ("attn_q", "attn_v", "attn_q_b", "attn_kv_b"),
}

#: A loss kernel that never holds the whole logits, replacing the framework's loss [bytes per token per vocabulary
#: entry]: Apple's Cut Cross-Entropy computes each block of logits in on-chip memory and keeps none (Wijmans et al.
#: 2024, arXiv 2411.09009: the loss of Gemma 2 2B at 8,192 tokens from 24 GB to 1 MB) — axolotl's
#: CutCrossEntropyPlugin, Unsloth; Liger Kernel's fused linear cross-entropy (``LigerFusedLinearCrossEntropyLoss``,
#: what ``apply_liger_kernel_to_<model>()`` and TRL's ``use_liger_kernel`` put on a causal LM by default) computes
#: the output head, the loss and its gradient chunk by chunk and never holds the whole logits either (Hsu et al. 2024,
#: arXiv 2410.10989, section 3.2; a chunk's logits are transient: counted as none). A fused loss is off (None: the
#: framework's own) unless a run turns it on.
LOSS_KERNELS = {"cce": 0.0, "liger": 0.0}
#: DeepSpeed reduce_bucket_size default (5e8 elements): what stays on the GPU of the gradients when they
#: are offloaded (https://www.deepspeed.ai/docs/config-json/ "reduce_bucket_size", default 500000000)
ZERO_REDUCE_BUCKET = 5e8
#: ZeRO-3 / FSDP gather one layer's parameters at a time and prefetch the next (FSDP paper, Zhao et al.
#: 2023, arXiv 2304.11277, section 3.3 backward/forward prefetch): 2 layers in GPU memory at once
ZERO3_LIVE_LAYERS = 2

# -- diffusion ------------------------------------------------------------------------------------
#: default image size of each diffusion model [pixels per side] (model cards: SD 1.5 512, SDXL/SD3.5/FLUX 1024)
DIFFUSION_DEFAULT_SIZE = {"sd-1.5": 512}
DIFFUSION_DEFAULT_SIZE_OTHER = 1024
#: Activation allowance of a diffusion pipeline: the VAE decoder's full-resolution stage (diffusers
#: AutoencoderKL, block_out_channels[0] = 128) holds about 3 tensors of H × W × 128 16-bit values
#: (resnet input, norm output, conv output). A documented allowance, not a measurement.
VAE_CHANNELS = 128
VAE_LIVE_TENSORS = 3
