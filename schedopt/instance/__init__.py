"""Instances of format `schedopt-instance/1`: load (JSON/YAML), validate, build, save."""

from schedopt.instance.load import load_instance, parse_instance, validate_file
from schedopt.instance.save import instance_to_dict, save_instance

__all__ = ["load_instance", "parse_instance", "save_instance", "instance_to_dict", "validate_file"]
