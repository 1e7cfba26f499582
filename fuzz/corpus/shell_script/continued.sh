vllm serve m \
  --port 8001 \
  -tp 2 > /log 2>&1