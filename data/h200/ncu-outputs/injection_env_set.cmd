ncu --launch-count 1 --target-processes all -o ncu python3 workload.py --steps 3 --warmup 1
