from gpudrv_check.cli import main

raise SystemExit(main())
