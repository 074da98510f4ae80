# A decode node whose context is written 1M: SGLang reads that as 1,000,000 tokens, not 2**20.
python3 -m sglang.launch_server --model-path zai-org/GLM-5.3-FP8 --trust-remote-code \
  --context-length 1M --page-size=64 --tp 8 --disaggregation-mode decode --port 30001
