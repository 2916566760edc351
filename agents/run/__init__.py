"""Running a turn: the loop (reasoner), prompt and tool selection (pipeline), the tools it
composes (toolbox), and where runs execute (runners)."""
