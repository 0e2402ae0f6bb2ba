"""Running the networks: ONNX Runtime sessions (CPU or CUDA) and the user's private cache directory."""
