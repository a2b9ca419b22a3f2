// Package bench owns all-reduce benchmarking: the sweep of cases (sizes,
// element types, reductions, algorithms), the rank program that times each
// case with device events and the host clock and then checks it bitwise
// against oracle.AllReduce, the statistics (median of timed loops,
// algorithm and bus bandwidth), and the outputs: an nccl-tests style table,
// JSON and CSV files in one schema shared with the reference scripts that
// time PyTorch and NCCL, and plots of time and bus bandwidth against size.
//
// The rank program ([Run]) runs unchanged on the simulator and on GPUs. On
// the simulator the device clock is virtual and does not advance while
// kernels run, so its figures are the host's CPU time spent simulating:
// useful to compare simulator changes, never GPU performance.
package bench
