# GLM-5.3 prefill node, as launched on 2026-08-27 (the command line, not the documentation).
python3 -m sglang.launch_server \
  --model-path zai-org/GLM-5.3-FP8 --trust-remote-code \
  --context-length 1048576 --page-size 64 \
  --tp 8 --mem-fraction-static 0.83 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend mooncake \
  --host 0.0.0.0 --port 30000
