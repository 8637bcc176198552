"""Front ends that turn models from other frameworks into exactplace graphs (torch: :mod:`.torch`)."""
