"""The built-in ``ocr`` converter: Amazon Textract on AWS (``textract``), Tesseract locally
(``tesseract``); the composition root picks one from ``OCR_ENGINE`` (``Container.ocr_engine``)."""
