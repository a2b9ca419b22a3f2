// Package simjob runs a job of ranks on the simulator: W simulated devices,
// the Store, the simulated IPC network and every rank program under one
// seeded scheduler, optionally with the happens-before race detector. The
// same configuration and seed give the same trace. Package rank knows
// nothing of it: a rank is built from [rank.Params] whatever runs it.
package simjob
