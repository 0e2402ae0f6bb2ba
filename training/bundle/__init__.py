"""Writing the model bundle: the bundle itself and its updates (``export``), the networks as ONNX graphs
(``onnx_export``), their fp16 storage (``onnx_fp16``) and static int8 quantisation (``quantize``), and the model
card written from a bundle's manifest (``model_card``)."""
