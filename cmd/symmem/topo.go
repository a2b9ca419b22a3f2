package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/symmem/symmem/actor"
	"github.com/symmem/symmem/backend"
	"github.com/symmem/symmem/device/sim"
)

func newTopoCmd() *cobra.Command {
	var dev string
	var world int
	cmd := &cobra.Command{
		Use:   "topo",
		Short: "Print the NVLink topology matrix and whether it is fully connected",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			errs := append(flagErrors(cmd), checkDevice(dev), checkWorld("world", world), checkKernelImage())
			if err := errors.Join(errs...); err != nil {
				return err
			}
			var m [][]int
			switch dev {
			case "cuda":
				d, err := backend.OpenGPU(0)
				if err != nil {
					return err
				}
				defer d.Close()
				if m, err = d.NVLinkMatrix(); err != nil {
					return err
				}
			case "sim":
				w, err := sim.NewWorld(actor.NewScheduler(actor.Config{}), sim.Config{World: world})
				if err != nil {
					return err
				}
				if m, err = w.Device(0).NVLinkMatrix(); err != nil {
					return err
				}
			default:
				return fmt.Errorf("--device %q: want sim or cuda", dev)
			}
			printMatrix(cmd.OutOrStdout(), m, dev == "sim")
			return nil
		},
	}
	cmd.Flags().StringVar(&dev, "device", "sim", "device: sim or cuda")
	cmd.Flags().IntVar(&world, "world", 4, "number of simulated devices (sim only)")
	collectFlagErrors(cmd)
	return cmd
}

// printMatrix prints the NVLink matrix m, a legend, and a summary line;
// simulated says the devices are the simulator's.
func printMatrix(out io.Writer, m [][]int, simulated bool) {
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for j := range m {
		fmt.Fprintf(tw, "GPU%d\t", j)
	}
	fmt.Fprintln(tw)
	full := len(m) > 1
	for i, row := range m {
		fmt.Fprintf(tw, "GPU%d\t", i)
		for j, v := range row {
			fmt.Fprintf(tw, "%d\t", v)
			if i != j && v <= 0 {
				full = false
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(out, "Legend: the entry in row GPUi, column GPUj is the number of NVLink links between")
	fmt.Fprintln(out, "  the two devices; 0 on the diagonal, and where a pair has no NVLink (its")
	fmt.Fprintln(out, "  traffic goes over PCIe). Fully connected: every pair has at least one link.")
	kind := "devices"
	if simulated {
		kind = "simulated devices"
	}
	fmt.Fprintf(out, "%d %s, fully connected: %v\n", len(m), kind, full)
}
