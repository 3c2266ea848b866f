package rwpool

// ProcessCPU is processCPU for the external tests' benchmarks.
var ProcessCPU = processCPU
