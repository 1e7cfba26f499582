python3 -m sglang.launch_server --model-path m --port 30000 &
python3 metrics.py --port 9100
wait