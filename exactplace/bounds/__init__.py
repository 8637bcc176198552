"""Dual bounds: bin packing, the device-set relaxation, the latency path bound, the gap probe and the SCT LP."""
