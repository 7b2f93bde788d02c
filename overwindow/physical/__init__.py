"""Physical layer: how to compute. Sorting, frame bounds, kernels and the planner that picks them."""
