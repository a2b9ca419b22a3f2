// Package launch owns running one process per rank on real devices: the
// launcher that starts the rank processes with a shared Store and watches
// them ([Run], what `symmem launch` does), the environment a rank process
// reads from it ([ProcessEnvFromOS]), the failure a launcher publishes and
// the watch that turns it into the rank's abort ([PublishFailure],
// [PeerFailedError]), and the rank process's way into the job
// ([RunProcess]).
package launch
