NAME = "07_serving.ipynb"
TITLE = """# Serving
What does serving our traffic cost, on how many cards, and is an API cheaper?"""
PARAMS = '''
# Parameters (papermill: papermill 07_serving.ipynb out.ipynb -p requests_per_s 10)
model: str = "llama-3.1-8b"  # catalog model id
quant: str = "bf16"  # weight format
engine: str = "vllm"  # vllm | sglang | tensorrt-llm | llama.cpp | transformers | exllamav2
gpu: str = "h100-sxm"  # card id or name
gpus: int = 1  # cards per replica (tensor parallel)
requests_per_s: float = 2.0  # average requests per second
input_tokens: int = 1000  # input tokens per request
output_tokens: int = 200  # output tokens per request
prefix_hit: float = 0.0  # share of input tokens served from the prefix cache
peak_ratio: float = 1.0  # peak / average load
ttft_ms: float = 0.0  # target time to first token [ms]; 0 = none
tpot_ms: float = 50.0  # target time per output token [ms]; 0 = none
ttft_stat: str = "mean"  # what the TTFT target bounds: mean | p50 | p90
lang: str = "en"  # en | zh
currency: str = ""  # display currency; "" = the language's (USD for en, CNY for zh)
'''
BUILD = '''
from gpucost.ui.serving import ServingPage

page = ServingPage(model=model, quant=quant, engine=engine, gpu=gpu, gpus=gpus, requests_per_s=requests_per_s,
                   input_tokens=input_tokens, output_tokens=output_tokens, prefix_hit=prefix_hit,
                   peak_ratio=peak_ratio, ttft_ms=ttft_ms or None, tpot_ms=tpot_ms or None, ttft_stat=ttft_stat,
                   lang=lang, currency=currency or None)
page.display()
'''
