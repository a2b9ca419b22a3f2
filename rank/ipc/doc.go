// Package ipc owns the IpcChannel: passing file descriptors between the
// processes of one host, and the two fd collectives built on it
// (AllGatherFDs, a ring, and BroadcastFDs, a chain along the same ring).
//
// Two implementations satisfy [Channel]:
//
//   - [Socket], a Unix datagram socket per process, bound at
//     <temp dir>/symmem-ipc-<uid>-<job>/<pid>.sock, that carries one fd per
//     message as an SCM_RIGHTS control message. The job directory is private
//     (mode 0700, owned by the caller, refused otherwise) and the socket file
//     is mode 0600. Every received message carries the sender's
//     kernel-attested credentials (SO_PASSCRED / SCM_CREDENTIALS); a sender
//     whose uid differs from ours or whose pid is not in the channel's group
//     is rejected with a [*PeerRejectedError] and any fd it sent is closed.
//     Close removes the socket file, and the job directory when it is the
//     last; so does SIGTERM, SIGINT or SIGHUP, which the package handles
//     while a socket is open by removing the files and then ending the
//     process with the same signal (see [SetSignalCleanup]).
//   - [SimChannel], opened on a [SimNetwork] for the deterministic
//     simulator: messages queue per receiving pid, receives block through
//     [actor.Runtime.Wait] with virtual-time timeouts, fds move between the
//     simulated per-process fd tables of an [FDSpace], and every send,
//     receive and rejection is recorded in the trace.
//
// Both run the same collective code, so the ring, the chain and their
// checks behave identically on the simulator and on real processes.
//
// Collectives match messages by sender: a message from a pid other than the
// one a step waits for is kept and handed to the later receive that asks for
// it, so collectives on overlapping groups may interleave. Each collective
// message carries its operation, world size, origin rank and step, and a
// receiver that gets a message for a different step reports the mix-up as an
// error instead of using the wrong fd. A message from a sender that fails
// the credential check ends the receive (or collective) that meets it with
// the rejection.
//
// Ownership: an fd returned by RecvFD or by a collective (other than the
// caller's own entry) belongs to the caller, who must close it. On every
// error path the package closes the fds it received itself.
package ipc
