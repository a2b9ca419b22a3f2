package launch

import (
	"fmt"
	"os"
	"strconv"

	"github.com/symmem/symmem/rank/ipc"
)

// ProcessEnv is what a rank process learns from its launcher's environment
// (the variables torchrun sets, plus the Store token and IPC job id).
type ProcessEnv struct {
	Rank, World, LocalRank int
	StoreAddr              string // MASTER_ADDR:MASTER_PORT
	Token                  string // SYMMEM_STORE_TOKEN
	JobID                  string // SYMMEM_IPC_JOB
}

// Environment variables a launcher sets for each rank process.
const (
	EnvRank       = "RANK"
	EnvWorld      = "WORLD_SIZE"
	EnvLocalRank  = "LOCAL_RANK"
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	EnvToken      = "SYMMEM_STORE_TOKEN"
	EnvStoreActor = "SYMMEM_STORE_ACTOR"
)

// ProcessEnvFromOS reads the launcher's variables; ok is false when RANK is
// not set (not under a launcher).
func ProcessEnvFromOS() (env ProcessEnv, ok bool, err error) {
	if os.Getenv(EnvRank) == "" {
		return ProcessEnv{}, false, nil
	}
	num := func(name string) int {
		if err != nil {
			return 0
		}
		var v int
		v, err = strconv.Atoi(os.Getenv(name))
		if err != nil {
			err = fmt.Errorf("environment %s=%q: %w", name, os.Getenv(name), err)
		}
		return v
	}
	env.Rank, env.World, env.LocalRank = num(EnvRank), num(EnvWorld), num(EnvLocalRank)
	if err != nil {
		return env, true, err
	}
	addr, port := os.Getenv(EnvMasterAddr), os.Getenv(EnvMasterPort)
	if addr == "" || port == "" {
		return env, true, fmt.Errorf("environment: %s and %s must be set", EnvMasterAddr, EnvMasterPort)
	}
	env.StoreAddr = addr + ":" + port
	if a := os.Getenv(EnvStoreActor); a != "" {
		env.StoreAddr += "/" + a
	}
	env.Token = os.Getenv(EnvToken)
	env.JobID = os.Getenv(ipc.JobEnv)
	if env.World < 1 || env.Rank < 0 || env.Rank >= env.World {
		return env, true, fmt.Errorf("environment: rank %d of world %d", env.Rank, env.World)
	}
	return env, true, nil
}

// AllowOverlappingFromEnv reads SYMMEM_ALLOW_OVERLAPPING_DEVICES and
// TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES.
func AllowOverlappingFromEnv() bool {
	for _, k := range []string{"SYMMEM_ALLOW_OVERLAPPING_DEVICES", "TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES"} {
		if v := os.Getenv(k); v != "" && v != "0" {
			return true
		}
	}
	return false
}
