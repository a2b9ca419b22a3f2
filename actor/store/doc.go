// Package store owns the key/value rendezvous service that the ranks of one
// job share, and the collective helpers built on it.
//
// The pieces, from the inside out:
//
//   - [Machine], the pure store state: keys to values plus the requests
//     waiting for keys to appear. It does no I/O and reads no clock; timeouts
//     are driven from outside through [Machine.Expire].
//   - [Server], a protoactor actor wrapping one Machine per job. Its timers
//     come from an [actor.Runtime], so under the simulator's scheduler every
//     timeout runs in virtual time and every request is recorded in the
//     trace.
//   - [Client], what rank code uses. [Server.Connect] gives an in-process
//     client; [Serve] and [Dial] carry the same requests between OS processes
//     over protoactor remote on a loopback address, encoded in a compact
//     binary wire format that carries the job's token.
//   - [Exchange], all_gather and barrier over a Client, with one sequence
//     counter per (client connection, key prefix, group).
package store
