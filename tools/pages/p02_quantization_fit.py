NAME = "02_quantization_fit.ipynb"
TITLE = """# Quantization fit
Will a model run — or fine-tune — on a card, at which precision, on how many cards, how fast, and what does
each token cost? (Estimates with a published error table.)"""
PARAMS = '''
# Parameters (papermill: papermill 02_quantization_fit.ipynb out.ipynb -p model qwen2.5-7b -p quant awq)
model: str = "llama-3.1-8b"  # catalog model id (see data/models.csv)
quant: str = "q4_k_m"  # weight format id (see data/quant_formats.csv): bf16, fp8-e4m3, awq-4bit-g128, q4_k_m, ...
mode: str = "inference"  # inference | full | lora | qlora
engine: str = ""  # transformers | vllm | llama.cpp | tensorrt-llm (training: transformers | torchtune); "" = default
context: str = "4096"  # tokens per sequence (KV cache) or training sequence length; "32k" works
batch: int = 1  # concurrent sequences (inference) or micro-batch per GPU (training)
gpus: int = 1  # GPUs the per-GPU breakdown is for
zero: int = 0  # DeepSpeed ZeRO stage 0-3 (training)
offload: str = "none"  # none | cpu | nvme (training with ZeRO >= 1)
lora_rank: int = 16  # LoRA rank (lora, qlora)
loss_kernel: str = ""  # training loss: "" = the framework's, cce = Cut Cross-Entropy (keeps no logits)
precision: str = ""  # training precision: "" = the framework's, mixed, bf16 (a model loaded in bf16), fp32
lora_dropout: str = ""  # LoRA dropout: "" = the framework's, off, on (keeps a mask per adapted input)
gpu: str = "rtx-4090"  # card id or name for the chart and the longest context / largest batch
train_tokens_m: float = 100.0  # training run size [millions of tokens] for time and cost
images: int = 0  # images per request (vision-language models)
cpu_moe: int = 0  # layers whose experts stay in CPU RAM (llama.cpp --n-cpu-moe; MoE models)
host_bw_gbps: float = 0.0  # host memory bandwidth [GB/s] for cpu_moe; 0 = dual-channel DDR5-5600
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)
'''
BUILD = '''
from gpucost.ui.quant_fit import QuantFitPage

page = QuantFitPage(model=model, quant=quant, mode=mode, engine=engine, context=context, batch=batch, gpus=gpus,
                    zero=zero, offload=offload, lora_rank=lora_rank, gpu=gpu, train_tokens_m=train_tokens_m,
                    images=images, cpu_moe=cpu_moe, host_bw_gbps=host_bw_gbps or None, loss_kernel=loss_kernel,
                    precision=precision, lora_dropout=lora_dropout,
                    lang=lang, currency=currency or None)
page.display()
'''
