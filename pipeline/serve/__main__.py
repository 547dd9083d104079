from pipeline.serve.cli import main

main()
