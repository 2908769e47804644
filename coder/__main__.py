from coder.cli.main import main

raise SystemExit(main())
