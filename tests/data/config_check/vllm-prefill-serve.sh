vllm serve zai-org/GLM-5.3-FP8 --trust-remote-code \
  --max-model-len 1M --block-size 64 -tp 8 \
  --num-gpu-blocks-override 32769 \
  --kv-transfer-config '{"kv_connector": "NixlConnector", "kv_role": "kv_producer"}'
