"""Pseudo-human (PH) synthesis: scripts, voice references, TTS backends, assembly, clone QA.

Backends are plugins (entry point group ``duetflow.tts``); :func:`duetflow.tts.backend.load_backend`
builds one per process. The core path (the eSpeak NG ``default`` backend) needs no torch.
"""
