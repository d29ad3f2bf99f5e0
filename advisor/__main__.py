from advisor.shell.cli import entry

entry()
