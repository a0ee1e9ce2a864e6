"""The watchdog: how a rank waiting in a collective or for a message learns that another rank has left, or that it
waits too long.

A rank that leaves the group (its program ends, or it calls ``destroy_process_group``) sends every other rank
a notice: how many collectives it has started. Each rank posts the receives of the notices when it joins, and
a thread of its own looks at them ten times a second, together with the collective that its main thread waits
in now (``process_group.watched`` tells it: a number, a name, since when). A notice from a rank that never
started that collective, or a wait longer than the timeout, aborts the run with a message naming the
collective and the ranks; a rank waiting in MPI's blocking call can only be stopped from outside. A wait for a
message (``send``, ``recv``, a ``Work``'s ``wait``) is watched the same way: the peer's notice (after
``MESSAGE_GRACE`` seconds, in which a message it sent before leaving would still arrive), or the timeout,
aborts it, naming the peer.

The main thread's waits stay MPI's own blocking calls. A wait that tested the notices itself would cost the
normal path: ``Waitany`` on the collective and the notices together, or a Python loop of ``Test`` calls, takes
longer than ``Wait`` on the collective alone, most of all on a busy machine.
"""

import sys
import threading
import time

import numpy

#: the tag of the notice that a rank leaving the group sends every other rank
LEAVING = 1
#: seconds between printing a rank's error and aborting: MPI_Abort stops the launcher's relays too, and
#: an error written just before could be lost on its way to the terminal (seen with MPICH's mpiexec)
ABORT_DELAY = 0.5
#: seconds a wait for a message goes on after the peer's notice came, before the run is aborted
MESSAGE_GRACE = 0.5


class Watchdog(threading.Thread):
    """Watches the group of ``comm`` (through a duplicate of it, for the notices), with ``timeout`` seconds."""

    def __init__(self, comm, timeout):
        super().__init__(daemon=True, name="dlscratch.distributed watchdog")
        self.comm, self.control = comm, comm.Dup()
        self.timeout, self.every = timeout, min(0.1, timeout / 10)
        self.waiting, self.left, self.stopped = None, {}, threading.Event()  # left: rank -> (collectives, when)
        self.notices, self.sent = [], None  # this rank's notices once it leaves, and their buffer
        self.listening = []  # (rank, request, buffer) of the other ranks' notices not come yet
        for rank in range(self.control.Get_size()):
            if rank != self.control.Get_rank():
                buffer = numpy.zeros(1, numpy.int64)
                self.listening.append((rank, self.control.Irecv(buffer, source=rank, tag=LEAVING), buffer))
        self.start()

    def run(self):
        while not self.stopped.wait(self.every):
            self.look()

    def look(self):
        """Read the notices that have come; abort if the collective waited in now cannot finish or took too long."""
        for notice in [n for n in self.listening if n[1].Test()]:
            self.listening.remove(notice)
            self.left[notice[0]] = (int(notice[2][0]), time.monotonic())
        waiting = self.waiting
        if waiting is None:
            return
        number, name, since, peer = waiting
        me, world = self.comm.Get_rank(), self.comm.Get_size()
        others = [rank for rank in range(world) if rank != me]
        if number is None:
            message = self._message_cannot_come(name, since, others if peer is None else [peer])
            if message:
                abort(self.comm, message + "\n")
            return
        gone = sorted(rank for rank, (started, _) in self.left.items() if started < number)
        if gone:
            message = (f"{name}: {ranks(gone)} left the process group (its program ended, or it called "
                       f"destroy_process_group) before starting collective {number} (counting from "
                       f"init_process_group), while rank {me} waits for it there; every rank must run the same "
                       "collectives: as many steps, with as many batches (a DistributedSampler gives every rank "
                       "as many)")
        elif time.monotonic() - since > self.timeout:
            message = (f"{name}: rank {me} waited {self.timeout:g} s (init_process_group's timeout) for "
                       f"{ranks(others)} to start collective {number} (counting from init_process_group); "
                       f"{'it did not' if len(others) == 1 else 'not all did'} (stuck, far slower, or in another "
                       "collective?); if a rank legitimately takes longer, pass "
                       "init_process_group(timeout=datetime.timedelta(...))")
        else:
            return
        abort(self.comm, message + "\n")

    def _message_cannot_come(self, name, since, peers):
        """Why the message waited for from one of ``peers`` cannot come (every one of them left the group
        ``MESSAGE_GRACE`` seconds ago or more), or why it waited too long; None while it still may come."""
        me, now = self.comm.Get_rank(), time.monotonic()
        if all(rank in self.left and now - self.left[rank][1] > MESSAGE_GRACE for rank in peers):
            return (f"{name}: {ranks(peers)} left the process group (its program ended, or it called "
                    f"destroy_process_group) while rank {me} waits for a message with it; a send needs a recv "
                    "posted on the other rank, and the other way round")
        if now - since > self.timeout:
            matching = "recv" if name.startswith(("send", "isend")) else "send"
            return (f"{name}: rank {me} waited {self.timeout:g} s (init_process_group's timeout) for a message with "
                    f"{ranks(peers)}; did it post the matching {matching} (same tag)? If it legitimately takes longer, "
                    "pass "
                    "init_process_group(timeout=datetime.timedelta(...))")
        return None

    def leave(self, started):
        """Stop watching, and send every other rank this rank's notice: it has started ``started`` collectives."""
        self.stopped.set()
        self.join()
        self.sent = numpy.array([started], numpy.int64)
        self.notices = [self.control.Isend(self.sent, dest=rank, tag=LEAVING)
                        for rank in range(self.control.Get_size()) if rank != self.control.Get_rank()]

    def finish(self):
        """At exit: wait (sleeping, not spinning) for the other ranks' notices and for this rank's to be through,
        so that none is under way when MPI finalizes."""
        for _, request, _ in self.listening:
            while not request.Test():
                time.sleep(0.001)
        for notice in self.notices:
            notice.Wait()


def abort(comm, message):
    """Print ``message`` with this rank's number, then abort every rank (MPI_Abort)."""
    sys.stderr.write(f"[rank {comm.Get_rank()} of {comm.Get_size()}] {message}"
                     f"[rank {comm.Get_rank()}] aborting every rank (MPI_Abort), so that none waits forever\n")
    sys.stderr.flush()
    time.sleep(ABORT_DELAY)
    comm.Abort(1)


def ranks(numbers):
    """``[1]`` -> "rank 1", ``[1, 3]`` -> "ranks 1, 3"."""
    return f"rank {numbers[0]}" if len(numbers) == 1 else f"ranks {', '.join(map(str, numbers))}"
