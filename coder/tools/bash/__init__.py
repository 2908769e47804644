"""The shell: `bash` (tool.py: the persistent sandboxed shell), the commands the user sent to the background
(jobs.py) and `bash_output` (output_tool.py: the model's way to them)."""
