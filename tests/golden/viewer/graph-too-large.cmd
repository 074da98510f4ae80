ownership graph sglang_pd --max-nodes 50
