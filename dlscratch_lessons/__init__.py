"""What the lessons use and the library does not: the check cells' tools (``checking.py``).

Installed beside ``dlscratch`` (the same distribution), so that a lesson on Colab, which installs the course's
package from its repository, finds them; kept out of ``dlscratch`` so that the library holds only the framework.
"""
