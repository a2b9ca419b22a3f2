package kernels

import (
	"fmt"
	"sort"
)

// Kernel is one registered kernel.
type Kernel struct {
	Name string
	// Check validates an argument struct without touching device memory;
	// devices call it when a launch is enqueued.
	Check func(args any) error
	// Sim is the kernel body one block runs in the simulator.
	Sim func(b Block, args any) error
}

var registry = map[string]*Kernel{}

func register(k *Kernel) {
	if _, dup := registry[k.Name]; dup {
		panic(fmt.Sprintf("kernels: %s registered twice", k.Name))
	}
	registry[k.Name] = k
}

// Lookup returns the kernel registered under name.
func Lookup(name string) (*Kernel, bool) {
	k, ok := registry[name]
	return k, ok
}

// Names lists the registered kernels in sorted order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func init() {
	register(&Kernel{Name: PutSignal, Check: checkSignal(PutSignal), Sim: putSignalKernel})
	register(&Kernel{Name: WaitSignal, Check: checkSignal(WaitSignal), Sim: waitSignalKernel})
	register(&Kernel{Name: Barrier, Check: checkSignal(Barrier), Sim: barrierKernel})
	register(&Kernel{Name: OneShotAllReduce, Check: checkAllReduce(OneShotAllReduce), Sim: oneShotKernel})
	register(&Kernel{Name: TwoShotAllReduce, Check: checkAllReduce(TwoShotAllReduce), Sim: twoShotKernel})
	register(&Kernel{Name: LowLatencyAllReduce, Check: checkAllReduce(LowLatencyAllReduce), Sim: lowLatencyKernel})
}

func checkSignal(name string) func(any) error {
	return func(args any) error {
		a, err := asSignalArgs(name, args)
		if err != nil {
			return err
		}
		return a.check(name)
	}
}

func checkAllReduce(name string) func(any) error {
	return func(args any) error {
		a, err := asAllReduceArgs(name, args)
		if err != nil {
			return err
		}
		_, err = a.check(name)
		return err
	}
}
