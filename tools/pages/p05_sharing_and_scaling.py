NAME = "05_sharing_and_scaling.ipynb"
TITLE = """# Sharing & scaling
Can workloads share a card? How many GPUs does a training run need? Autoscale, use spot, or commit?"""
PARAMS = '''
# Parameters (papermill: papermill 05_sharing_and_scaling.ipynb out.ipynb -p share_mode time-slicing)
tab: int = 0  # 0 share a card | 1 multi-GPU training | 2 autoscaling & commitments
share_gpu: str = "a100-80gb-sxm"  # card to share (id or name)
workloads: str = "10:30,8:20:latency,16:40,4:10"  # MEM_GIB:UTIL_PCT[:latency], comma separated
share_mode: str = "mig"  # time-slicing | mig | mps
model: str = "llama-3.1-8b"  # model to train (catalog id)
train_gpu: str = "h100-sxm"  # card to train on
train_mode: str = "full"  # full | lora | qlora
tokens: str = "1B"  # token budget (1B, 500M, 2e9)
trace: str = "sample"  # job trace CSV path, or "sample" (bundled)
policy: str = "autoscale"  # fixed | autoscale | spot
max_gpus: int = 0  # fleet size / autoscaling cap; 0 = automatic
scale_gpu: str = "h100-sxm"  # card whose cloud prices the fleet pays
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)
'''
BUILD = '''
from gpucost.ui.sharing_scaling import SharingScalingPage

page = SharingScalingPage(tab=tab, share_gpu=share_gpu, workloads=workloads.replace(",", "\\n"),
                          share_mode=share_mode, model=model, train_gpu=train_gpu, train_mode=train_mode,
                          tokens=tokens, trace=trace, policy=policy, max_gpus=max_gpus, scale_gpu=scale_gpu,
                          lang=lang, currency=currency or None)
page.display()
'''
