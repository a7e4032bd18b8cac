import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';

/** One process as Linux's /proc shows it. */
export type ProcessInfo = {
  pid: number;
  ppid: number;
  /** Its process group: what `kill -- -PGID` signals. */
  pgid: number;
  /** Its session: a detached child's pid, kept by every descendant that does not call setsid. */
  sid: number;
  /** `R`, `S`, …; `Z` for a zombie (exited, not yet reaped: it holds no port and no file). */
  state: string;
  /** Clock ticks after boot: with the pid, names a process even once the pid is reused. */
  startTime: string;
  args: string[];
};

/** Every process on the machine, zombies included; one that exits while being read is skipped. */
export function listProcesses(): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name, in parentheses, may hold spaces: the fields start after its last ')'.
      const [state, ppid, pgid, sid, ...rest] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (args.at(-1) === '') args.pop();
      found.push({
        pid: Number(name),
        ppid: Number(ppid),
        pgid: Number(pgid),
        sid: Number(sid),
        state: state!,
        startTime: rest[15]!,
        args,
      });
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

const running = (proc: ProcessInfo) => proc.state !== 'Z' && proc.state !== 'X';

/**
 * The running processes that a command started as session leader `leader` (a detached child)
 * left: every process of its session, whatever its process group (turbo gives each task a group
 * of its own), and every process descending from it by parent links.
 */
export function processesOf(leader: number): ProcessInfo[] {
  const all = listProcesses();
  const children = new Map<number, ProcessInfo[]>();
  for (const proc of all) children.set(proc.ppid, [...(children.get(proc.ppid) ?? []), proc]);
  const found = new Map<number, ProcessInfo>();
  const walk = (proc: ProcessInfo) => {
    if (found.has(proc.pid)) return;
    found.set(proc.pid, proc);
    for (const child of children.get(proc.pid) ?? []) walk(child);
  };
  for (const proc of all) if (proc.sid === leader || proc.pid === leader) walk(proc);
  return [...found.values()].filter(running);
}

/** SIGKILL to every process that `processesOf(leader)` lists: a test's cleanup. */
export function killAll(leader: number): void {
  for (const { pid } of processesOf(leader)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // exited meanwhile
    }
  }
}

/** One line for a process in a failure message: pid, group and command line. */
export const describeProcess = ({ pid, pgid, args }: ProcessInfo) =>
  `${pid} (group ${pgid}): ${args.join(' ')}`;

/** Which of `processes` (as listed earlier) still run: same pid, same start time, not a zombie. */
export function stillRunning(processes: ProcessInfo[]): ProcessInfo[] {
  const now = new Map(listProcesses().map((proc) => [proc.pid, proc]));
  return processes.flatMap((proc) => {
    const current = now.get(proc.pid);
    return current?.startTime === proc.startTime && running(current) ? [current] : [];
  });
}

/** Whether a TCP connection to 127.0.0.1:`port` is refused: nothing listens there. */
export function portRefuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}
