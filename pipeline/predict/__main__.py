from pipeline.predict.cli import main

main()
