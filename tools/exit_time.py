import subprocess, sys, time
cmd=sys.argv[1:]
p=subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
t_exit=None
for line in p.stdout:
    if 'exiting with traffic' in line or 'waiting' in line: t_exit=time.time()
p.wait(); t_end=time.time()
print(f"rc={p.returncode} exit-to-end={t_end-t_exit if t_exit else -1:.3f}s")
