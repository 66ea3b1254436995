from hhx.app import main

main()
