"""Read the WINGS RDF/XML templates of the OPMW corpus despite their repeated ``rdf:ID``.

The WINGS serialiser (RDF API for PHP) writes one resource in several blocks, each naming it
with ``rdf:ID="x"``. RDF/XML allows an ``rdf:ID`` value only once per document, so rdflib's
strict parser rejects every one of the 70 corpus files ("two elements cannot use the same ID").
An ``rdf:ID="x"`` on a *node element* means exactly ``rdf:about="#x"`` resolved against the
document base (RDF 1.1 XML Syntax, section 2.14), and repeating an ``rdf:about`` is legal, so
rewriting the attribute keeps the graph identical while making the files parseable.

The rewrite is done on the XML tree (``xml.etree``), following RDF/XML's node/property
"striping", so that an ``rdf:ID`` on a *property* element (which means reification, not naming)
is left alone and literal XML content is never touched.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import rdflib

RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_ID = f"{{{RDF_NS}}}ID"
_ABOUT = f"{{{RDF_NS}}}about"
_PARSE_TYPE = f"{{{RDF_NS}}}parseType"
_RDF_ROOT = f"{{{RDF_NS}}}RDF"


def _node_element(el: ET.Element) -> None:
    """Rewrite ``rdf:ID`` to ``rdf:about="#..."`` on a node element, then recurse."""
    ident = el.attrib.pop(_ID, None)
    if ident is not None:
        if _ABOUT in el.attrib:
            raise ValueError(f"element {el.tag} has both rdf:ID and rdf:about")
        el.set(_ABOUT, "#" + ident)
    for child in el:
        _property_element(child)


def _property_element(el: ET.Element) -> None:
    """Descend into a property element: its children are node elements unless parseType says otherwise."""
    parse_type = el.get(_PARSE_TYPE)
    if parse_type == "Literal":
        return  # XML literal: opaque content, not RDF
    for child in el:
        if parse_type == "Resource":
            _property_element(child)  # children of parseType="Resource" are property elements
        else:
            _node_element(child)


def rdf_ids_to_about(xml: bytes | str) -> str:
    """Return the RDF/XML document with every node-element ``rdf:ID="x"`` turned into ``rdf:about="#x"``.

    Parameters
    ----------
    xml
        The raw document. Bytes are preferred so that the XML declaration's encoding is honoured.

    Returns
    -------
    str
        The rewritten document (namespace prefixes may be renamed; the triples are unchanged).

    Raises
    ------
    xml.etree.ElementTree.ParseError
        If the input is not well-formed XML.

    Examples
    --------
    >>> doc = ('<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
    ...        'xml:base="http://ex.org/t.owl#"><rdf:Description rdf:ID="a"/>'
    ...        '<rdf:Description rdf:ID="a"/></rdf:RDF>')
    >>> rdf_ids_to_about(doc).count('about="#a"')
    2
    """
    root = ET.fromstring(xml)
    if root.tag == _RDF_ROOT:
        for child in root:
            _node_element(child)
    else:  # a document may be a single node element
        _node_element(root)
    return ET.tostring(root, encoding="unicode")


def parse_wings_rdfxml(path: str | Path) -> rdflib.Graph:
    """Parse a WINGS template file into an rdflib graph, applying :func:`rdf_ids_to_about` first.

    The file URI is the fallback base for documents without ``xml:base`` (as RDF/XML specifies
    for ``rdf:ID``); the corpus files all declare their own ``xml:base``.
    """
    path = Path(path)
    text = rdf_ids_to_about(path.read_bytes())
    graph = rdflib.Graph()
    graph.parse(data=text, format="xml", publicID=path.resolve().as_uri())
    return graph
