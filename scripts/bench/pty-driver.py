# Terminal benchmarks, run by pty.mjs: CMD on a fresh pseudo-terminal, measured from its master.
#   pty-driver.py echo N CMD...     keystroke-to-echo latency: type one byte, wait for its echo,
#                                   N times; prints the median in ms (CMD: a program that echoes,
#                                   e.g. cat in the terminal's cooked mode)
#   pty-driver.py output BYTES CMD...   read everything CMD prints; prints MB/s from the first byte
#                                   to the last (start-up excluded) and checks BYTES arrived
import os, select, statistics, sys, time

mode, n, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
pid, master = os.forkpty()
if pid == 0:
    os.execvp(cmd[0], cmd)

def read_some(timeout=30):
    r, _, _ = select.select([master], [], [], timeout)
    if not r:
        raise SystemExit('pty-driver: no output within %ds' % timeout)
    try:
        return os.read(master, 1 << 20)
    except OSError:
        return b''

if mode == 'echo':
    # Wait until the command echoes (it is up), then time single keystrokes.
    deadline = time.monotonic() + 30
    while True:
        os.write(master, b'.')
        r, _, _ = select.select([master], [], [], 0.2)
        if r and b'.' in os.read(master, 65536):
            break
        if time.monotonic() > deadline:
            raise SystemExit('pty-driver: the command never echoed')
    time.sleep(0.2)
    while select.select([master], [], [], 0.05)[0]:
        os.read(master, 65536)
    times = []
    for i in range(n):
        key = b'abcdefghijklmnopqrstuvwxyz'[i % 26:i % 26 + 1]
        t0 = time.perf_counter()
        os.write(master, key)
        got = b''
        while key not in got:
            got += read_some()
        times.append((time.perf_counter() - t0) * 1000)
        if i % 50 == 49:
            os.write(master, b'\r')
            time.sleep(0.01)
            while select.select([master], [], [], 0.02)[0]:
                os.read(master, 65536)
    os.write(master, b'\x04\x04')
    print('%.3f' % statistics.median(times))
else:
    total, first = 0, None
    while True:
        data = read_some()
        if not data:
            break
        if first is None:
            first = time.perf_counter()
        total += len(data)
    last = time.perf_counter()
    # The terminal turns each \n into \r\n (and srt's relay adds nothing); count file bytes.
    if total < n:
        raise SystemExit('pty-driver: %d of %d bytes arrived' % (total, n))
    print('%.1f' % (n / (last - first) / 1e6))
os.waitpid(pid, 0)
