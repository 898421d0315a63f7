from gpudrv_check.cli import run

run()
