"""exit_code.py N CMD...: runs CMD, passes its output on, and exits 0 iff
CMD exited with status N (lit's `not` only tells zero from non-zero)."""
import subprocess
import sys

want = int(sys.argv[1])
rc = subprocess.run(sys.argv[2:]).returncode
if rc != want:
    print(f"exit_code.py: exit status {rc}, expected {want}", file=sys.stderr)
    sys.exit(1)
